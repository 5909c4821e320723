"""The verdict rule (stats/verdict_rule.py): hand-computed cases, and on generated rows the
agreement of the verdict with the interval printed at the adjusted level."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from pyfxprof.stats.rank_tests import benjamini_hochberg
from pyfxprof.stats.verdict_rule import adjusted_confidence, smallest_resolvable, verdicts


def test_verdicts_against_the_margin():
    change = verdicts(estimate=[0.05, 0.05, 0.0, 0.01, -0.03], low=[0.03, -0.01, -0.01, 0.005,
                      -0.04], high=[0.07, 0.11, 0.01, 0.015, -0.02],
                      q_values=[0.001, 0.2, 0.001, 0.001, 0.01], margin=0.02, fdr=0.05)
    # significant and beyond; wide and not significant; inside the margin (even if
    # significant); significant and -3%
    assert change.tolist() == ["+", "?", "=", "=", "-"]


def test_an_interval_beyond_the_margin_is_never_unresolved():
    # q above the FDR (another view's test disagreed): the interval decides
    change = verdicts([0.2, -0.2], [0.19, -0.21], [0.21, -0.19], [0.3, 0.3], 0.02, 0.05)
    assert change.tolist() == ["+", "-"]


def test_smallest_resolvable():
    assert smallest_resolvable([0.01, 0.01], 0.02) == 0.02
    assert smallest_resolvable([0.04, 0.06, np.inf], 0.02) == 0.05
    assert math.isnan(smallest_resolvable([np.nan], 0.02))


@pytest.mark.parametrize("q, expected", [([0.01], 0.95), ([0.5, 0.5], 0.975),
                                         ([0.01, 0.01, 0.5, 0.5], 0.975), ([np.nan], 0.95)])
def test_adjusted_confidence(q, expected):
    assert adjusted_confidence(q, 0.05) == pytest.approx(expected)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-0.5, 0.5), min_size=1, max_size=40), st.floats(0.005, 0.1),
       st.floats(0.0, 0.05))
def test_verdict_agrees_with_the_adjusted_interval(estimates, scale, margin):
    """Normal rows of one scale: at the adjusted level an interval excludes 0 exactly when
    its q-value is at most the FDR; beyond the margin it is slower or faster; holding 0 it
    is neither."""
    estimate = np.asarray(estimates)
    p = 2 * norm.sf(np.abs(estimate) / scale)
    q = benjamini_hochberg(p)
    level = adjusted_confidence(q, 0.05)
    half = norm.ppf(0.5 + level / 2) * scale
    low, high = estimate - half, estimate + half
    change = verdicts(estimate, low, high, q, margin, 0.05)
    excludes = (low > 0) | (high < 0)
    close = np.isclose(np.abs(estimate), half, rtol=1e-9, atol=1e-12)  # on the edge
    assert ((excludes == (q <= 0.05)) | close).all()
    assert (change[(low >= margin) & (low > 0)] == "+").all()
    assert (change[(high <= -margin) & (high < 0)] == "-").all()
    assert not np.isin(change[~excludes], ["+", "-"]).any()


def test_aa_rows_flag_at_most_the_fdr():
    """Generated A/A views of 13 normal rows (seeded): a row slower or faster in at most
    5% of 400 views, the intervals at the adjusted level."""
    rng = np.random.default_rng(46)
    flagged = 0
    for _ in range(400):
        estimate = rng.normal(0.0, 0.02, 13)
        p = 2 * norm.sf(np.abs(estimate) / 0.02)
        q = benjamini_hochberg(p)
        half = norm.ppf(0.5 + adjusted_confidence(q, 0.05) / 2) * 0.02
        flagged += np.isin(verdicts(estimate, estimate - half, estimate + half, q, 0.02,
                                    0.05), ["+", "-"]).any()
    assert flagged <= 20


def test_a_common_shift_of_the_sessions_is_taken_out_of_the_interval():
    """One session per side, every row +20% (a drift or a change of the whole model): an
    interval at +20% is not beyond the margin once the shift is taken out."""
    change = verdicts([0.2, 0.5], [0.18, 0.45], [0.22, 0.55], [0.9, 0.001], 0.02, 0.05,
                      shift=math.log(1.2))
    assert change.tolist() == ["?", "+"]
