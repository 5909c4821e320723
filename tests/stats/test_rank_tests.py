import math

import numpy as np
import pytest

from pyfxprof.stats.rank_tests import (benjamini_hochberg, hodges_lehmann, signed_rank_cdf,
                                        signed_rank_p)


def test_signed_rank_null_counts_subsets_of_ranks():
    # n = 3: subsets of {1, 2, 3} by sum: 0:{}, 1:{1}, 2:{2}, 3:{3},{1,2}, 4:{1,3}, 5:{2,3}, 6:{1,2,3}
    density = np.diff(signed_rank_cdf(3), prepend=0.0) * 8
    assert density.tolist() == [1, 1, 1, 2, 1, 1, 1]


def test_signed_rank_p_matches_scipy_exact():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for n in (6, 10, 15, 25):
        values = rng.normal(0.2, 1.0, n)
        assert signed_rank_p(values) == pytest.approx(
            scipy_stats.wilcoxon(values, method="exact").pvalue)


def test_signed_rank_p_edge_cases():
    assert math.isnan(signed_rank_p([0.0, 0.0]))
    assert signed_rank_p([1.0, -1.0]) == 1.0
    assert signed_rank_p([-1.0] * 6) == pytest.approx(2 / 64)


def test_hodges_lehmann_hand_computed():
    # Walsh averages of (0, 1, 5): 0, 0.5, 2.5, 1, 3, 5 -> median (1 + 2.5) / 2 = 1.75
    assert hodges_lehmann([0.0, 1.0, 5.0])[0] == 1.75
    estimate, low, high = hodges_lehmann(np.arange(1.0, 9.0))
    assert (estimate, low, high) == (4.5, 2.0, 7.0)  # k = 4 of 36 Walsh averages


def test_hodges_lehmann_interval_covers_about_95_percent():
    rng = np.random.default_rng(11)
    covered = sum(low <= 0.3 <= high for low, high in
                  (hodges_lehmann(rng.standard_t(3, 12) + 0.3)[1:] for _ in range(400)))
    assert 0.92 <= covered / 400 <= 0.99


def test_benjamini_hochberg_hand_computed():
    # sorted p 0.01, 0.02, 0.03, 0.5 -> x4/1, x4/2, x4/3, x4/4 = 0.04, 0.04, 0.04, 0.5
    q = benjamini_hochberg([0.03, 0.5, 0.01, 0.02])
    assert q.round(6).tolist() == [0.04, 0.5, 0.04, 0.04]
    assert np.isnan(benjamini_hochberg([np.nan])).all()
