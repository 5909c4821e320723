"""The one order-statistic interval (stats/order_statistics.py) against scipy.stats.binom, for
n = 0 to 100,000 and any quantile: each end the tightest that keeps its side within
(1 - confidence) / 2, ties, zeros and huge values taken as they come, NaN and inf refused."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pyfxprof.errors import ArgumentError
from pyfxprof.stats.confidence import CONFIDENCE
from pyfxprof.stats.order_statistics import (binomial_cdf, binomial_ppf, median_interval,
                                             order_ranks, quantile_interval, runs_needed)

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None)
#: Absolute slack on a probability compared with scipy's: both are float cdfs, and a side
#: whose probability equals alpha to 1e-10 may go either way (as scipy's own ppf does).
SLACK = 1e-9

sizes = st.one_of(st.integers(1, 40), st.integers(41, 2_000), st.integers(2_001, 100_000),
                  st.sampled_from([1023, 1024, 1025, 5000, 100_000]))
quantiles = st.one_of(st.sampled_from([0.5, 0.9, 0.99, 0.999, 0.01, 0.25]),
                      st.floats(0.001, 0.999))
levels = st.one_of(st.just(CONFIDENCE), st.sampled_from([0.5, 0.8, 0.9, 0.99, 0.999]))


@SETTINGS
@given(n=sizes, q=quantiles, confidence=levels)
def test_each_end_is_the_tightest_within_its_share_of_scipys_binomial(n, q, confidence):
    low, high = order_ranks(n, q, confidence)
    alpha = (1 - confidence) / 2
    binom = stats.binom(n, q)
    assert 0 <= low <= n and 1 <= high <= n + 1
    # X(low) > x_q has probability P(B < low): within alpha, and X(low + 1) would not be
    assert binom.cdf(low - 1) <= alpha + SLACK
    assert low == n or binom.cdf(low) > alpha - SLACK
    # X(high) < x_q has probability P(B >= high): within alpha, and X(high - 1) would not be
    assert high == n + 1 or binom.sf(high - 1) <= alpha + SLACK
    assert binom.sf(high - 2) > alpha - SLACK
    # so the interval covers with at least `confidence`, whatever the distribution
    assert binom.cdf(high - 1) - binom.cdf(low - 1) >= confidence - 2 * SLACK


@SETTINGS
@given(n=sizes, q=quantiles)
def test_the_binomial_cdf_and_ppf_are_scipys(n, q):
    cdf = binomial_cdf(n, q)
    reference = stats.binom.cdf(np.arange(n + 1), n, q)
    assert np.max(np.abs(cdf - reference)) < 1e-9
    for level in (0.005, 0.025, 0.5, 0.975, 0.995):
        assert abs(binomial_ppf(cdf, level) - stats.binom.ppf(level, n, q)) <= \
            (1 if np.min(np.abs(reference - level)) < SLACK else 0)


def _values(n, seed, kind):
    """n values of one kind: ties (few distinct), zeros, huge (around 1e15 ns), or ns."""
    rng = np.random.default_rng(seed)
    if kind == "ties":
        return rng.integers(0, 3, n) * 1000
    if kind == "zeros":
        return np.zeros(n, dtype=np.int64)
    if kind == "huge":
        return 10 ** 15 + rng.integers(0, 10 ** 6, n)
    return rng.lognormal(13, 1, n).astype(np.int64)


@SETTINGS
@given(n=st.one_of(st.integers(1, 50), st.integers(51, 100_000)), seed=st.integers(0, 2**32),
       kind=st.sampled_from(["ties", "zeros", "huge", "ns"]), q=quantiles)
def test_the_interval_is_the_sorted_values_at_the_ranks_around_the_sample_quantile(n, seed,
                                                                                  kind, q):
    values = _values(n, seed, kind)
    low, high = quantile_interval(values, q)
    ranks = order_ranks(n, q)
    ordered = np.sort(values)
    assert low == (ordered[ranks[0] - 1] if ranks[0] else -math.inf)
    assert high == (ordered[ranks[1] - 1] if ranks[1] <= n else math.inf)
    # the sample quantile an order statistic is (X(ceil(nq))) lies inside; numpy's default
    # (linear) may not at tiny n: the 2 values [1000, 2000] bound p99 from below by 2000
    assert low <= np.quantile(values, q, method="inverted_cdf") <= high
    assert math.isinf(high) == (n < runs_needed(q))


@pytest.mark.parametrize("n", [1023, 1024, 5000, 100_000, 1_000_000])
def test_large_n_neither_overflows_nor_loses_the_interval(n):
    low, high = median_interval(np.arange(n))
    half = 1.959964 * math.sqrt(n) / 2  # the normal approximation, right at large n
    assert abs((n / 2 - low) - half) <= 2 and abs((high - n / 2) - half) <= 2


def test_fewer_than_two_values_and_the_runs_needed():
    assert quantile_interval([], 0.5) == (-math.inf, math.inf)
    assert quantile_interval([7], 0.5) == (-math.inf, math.inf)
    assert quantile_interval([7], 0.99) == (7.0, math.inf)  # P(X(1) > p99) = 0.01
    for q in (0.5, 0.9, 0.99, 0.999):
        n = runs_needed(q)
        assert order_ranks(n, q)[1] == n and order_ranks(n - 1, q)[1] == n
    assert median_interval(range(1, 21)) == (6.0, 15.0)  # P(B <= 5) = 0.021 <= 0.025 < P(B <= 6)


@pytest.mark.parametrize("bad", [[1.0, math.nan], [math.inf, 2.0], [-math.inf], [math.nan]])
def test_nan_and_infinite_values_are_refused(bad):
    with pytest.raises(ArgumentError, match="finite"):
        quantile_interval(bad, 0.5)


@pytest.mark.parametrize("bad", [0, 1, 0.0, 1.0, -0.5, 2, math.nan, math.inf, True, "0.5", None])
def test_quantile_and_confidence_outside_zero_one_are_refused(bad):
    with pytest.raises(ArgumentError, match="strictly between 0 and 1"):
        quantile_interval([1, 2, 3], bad)
    with pytest.raises(ArgumentError, match="strictly between 0 and 1"):
        order_ranks(10, 0.5, bad)


def test_the_intervals_cover_their_quantile_in_simulation():
    rng = np.random.default_rng(1)
    for q, n in ((0.99, 600), (0.5, 31)):
        truth = -math.log(1 - q)  # exponential(1)
        hits = sum(low <= truth <= high for low, high in
                   (quantile_interval(rng.exponential(size=n), q) for _ in range(400)))
        assert 0.92 <= hits / 400 <= 0.995
