"""Column reductions without a copy: the same figures as the copying numpy expressions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pyfxprof.stats import columns
from pyfxprof.stats.columns import column_medians, kept_spans, masked_row_sums


@st.composite
def samples_and_mask(draw):
    runs, nodes = draw(st.integers(0, 12)), draw(st.integers(0, 12))
    samples = draw(arrays(np.int64, (runs, nodes), elements=st.integers(0, 10**12)))
    return samples, draw(arrays(np.bool_, nodes))


@settings(max_examples=200, deadline=None)
@given(samples_and_mask(), st.integers(1, 64))
def test_the_figures_are_those_of_the_copied_columns(case, block_bytes):
    samples, mask = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(columns, "BLOCK_BYTES", block_bytes)  # blocks down to one column
        medians = column_medians(samples, mask)
    assert np.array_equal(masked_row_sums(samples, mask), samples[:, mask].sum(axis=1))
    if samples.shape[0]:
        assert np.array_equal(medians, np.median(samples[:, mask], axis=0))
    else:
        assert medians.shape == (int(mask.sum()),)


@given(arrays(np.bool_, st.integers(0, 40)))
def test_the_spans_cover_exactly_the_kept_columns(mask):
    covered = np.zeros(mask.shape, dtype=bool)
    spans = kept_spans(mask)
    for start, stop in spans:
        assert start < stop and not covered[start:stop].any()
        covered[start:stop] = True
    assert np.array_equal(covered, mask)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))  # separate, in order
