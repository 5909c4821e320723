"""The spread of rows' changes by duration (stats/spread_curve.py): a known spread recovered,
changes left out, and the non-negative fit against scipy's nnls."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from pyfxprof.stats.spread_curve import SpreadCurve, fit_spread, nonnegative_fit


def test_fit_recovers_a_known_spread_by_duration():
    rng = np.random.default_rng(3)
    durations = np.geomspace(1e4, 1e7, 400)
    truth = np.sqrt(0.01 ** 2 + (3e3 / durations) ** 2)   # ~3 us copy to copy, 1% floor
    departures = rng.normal(0.0, truth)
    curve = fit_spread(departures, np.zeros(400), durations, truth)
    assert curve.at([1e4])[0] == pytest.approx(truth[0], rel=0.2)
    assert curve.at([1e7])[0] == pytest.approx(truth[-1], rel=0.3)


def test_a_real_change_is_left_out_of_the_fit():
    durations = np.geomspace(1e5, 1e6, 40)
    departures = np.where(np.arange(40) % 2, 0.01, -0.01)
    departures[20] = 0.5                                   # one row changed
    curve = fit_spread(departures, np.zeros(40), durations, np.full(40, 0.01))
    assert curve.rows == 39
    assert curve.at([durations[20]])[0] == pytest.approx(0.01, rel=0.05)


def test_curve_is_clamped_to_the_fitted_durations():
    curve = SpreadCurve((0.0, 0.0, 1e-4), 1e4, 1e4, 1e6, 10)  # 1% at 10 us, rising below
    assert curve.at([1e3])[0] == pytest.approx(curve.at([1e4])[0])


def test_nonnegative_fit_drops_a_negative_slope():
    terms = np.column_stack([np.ones(4), np.arange(4.0)])
    found = nonnegative_fit(terms, np.array([4.0, 3.0, 2.0, 1.0]), np.ones(4))
    assert found.tolist() == [2.5, 0.0]


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(rows=st.integers(1, 2_000), seed=st.integers(0, 2**32),
       scale=st.sampled_from([1e-6, 1.0, 1e15]))
def test_nonnegative_fit_is_as_good_as_scipys_nnls(rows, seed, scale):
    rng = np.random.default_rng(seed)
    terms = np.column_stack([np.ones(rows), rng.uniform(0, 4, rows), rng.uniform(0, 16, rows)])
    values = rng.normal(0, 1, rows) * scale
    weights = rng.uniform(0.1, 10, rows)
    found = nonnegative_fit(terms, values, weights)
    root = np.sqrt(weights)
    reference = optimize.nnls(terms * root[:, None], values * root)[0]
    cost = lambda c: float(np.sum(weights * (values - terms @ c) ** 2))  # noqa: E731
    assert (found >= 0).all()
    assert cost(found) <= cost(reference) * (1 + 1e-9) + 1e-12 * scale ** 2
