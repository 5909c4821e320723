"""The sweep's robust line (stats/line_fit.py): Theil–Sen against the median of the pairwise
slopes (ties in y, 1e15 ns), a wild point ignored."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyfxprof.stats.line_fit import fit_rows, theil_sen


def test_theil_sen_ignores_one_wild_point():
    intercept, slope, r2 = theil_sen([1, 2, 4, 8, 16], [300, 400, 9999, 1000, 1800])
    assert (intercept, slope) == (200.0, 100.0) and r2 < 0.5


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(sizes=st.lists(st.integers(1, 4096), min_size=2, max_size=12, unique=True),
       seed=st.integers(0, 2**32), scale=st.sampled_from([1.0, 1e6, 1e15]))
def test_theil_sen_is_the_median_of_the_pairwise_slopes(sizes, seed, scale):
    rng = np.random.default_rng(seed)
    x = np.asarray(sizes, dtype=np.float64)
    y = scale * (1 + rng.uniform(0, 1) * x + rng.normal(0, 0.1, len(x)))
    intercept, slope, _ = theil_sen(x, y)
    pairs = [(y[j] - y[i]) / (x[j] - x[i]) for i in range(len(x)) for j in range(i + 1, len(x))]
    assert slope == pytest.approx(np.median(pairs), rel=1e-9, abs=1e-9 * scale)
    assert intercept == pytest.approx(np.median(y - slope * x), rel=1e-9, abs=1e-6 * scale)


def test_fit_rows_marks_overhead_bound_parts():
    frame = fit_rows([1, 2, 4], np.array([[210.0, 5.0], [220.0, 9.0], [240.0, 17.0]]))
    assert frame["overhead_bound"].tolist() == [True, False]
    assert frame["fixed_share_at_1"].round(3).tolist() == [round(200 / 210, 3), 0.2]
