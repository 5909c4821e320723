"""Tests of pyfxprof.stats.ranks: average ranks, the incomplete beta and Spearman's test, each
against scipy's on random cases (scipy is what they stand in for)."""

import numpy as np
import pytest
from scipy import special, stats

from pyfxprof.stats.ranks import average_ranks, incomplete_beta, spearman


def test_average_ranks_are_scipys_rankdata_ties_included():
    rng = np.random.default_rng(0)
    for _ in range(200):
        values = rng.integers(0, 6, size=(int(rng.integers(1, 40)), int(rng.integers(1, 4))))
        assert np.array_equal(average_ranks(values), stats.rankdata(values, axis=0))
        assert np.array_equal(average_ranks(values[:, 0]), stats.rankdata(values[:, 0]))


@pytest.mark.parametrize("a, b, x", [(2, 3, 0.4), (10, 0.5, 0.9), (0.5, 0.5, 0.01),
                                     (100, 0.5, 0.999), (1.5, 0.5, 0.3), (3, 0.5, 0.0),
                                     (3, 0.5, 1.0)])
def test_incomplete_beta_is_scipys(a, b, x):
    assert incomplete_beta(a, b, x) == pytest.approx(special.betainc(a, b, x), rel=1e-12,
                                                      abs=1e-300)


def test_spearman_is_scipys_spearmanr():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(4, 80))
        y = rng.normal(size=n) + np.arange(n) * rng.normal() * 0.1
        y[rng.integers(0, n)] = y[0]  # a tie
        rho, p_value = spearman(np.arange(n), y)
        expected = stats.spearmanr(np.arange(n), y)
        assert rho == pytest.approx(expected[0], abs=1e-12)
        assert p_value == pytest.approx(expected[1], rel=1e-9, abs=1e-15)
    assert spearman([1, 2, 3, 4], [2, 4, 6, 8]) == (1.0, 0.0)
