import math

import numpy as np
import pytest

from pyfxprof.stats.session_tests import (SessionNoise, block_values, median_errors,
                                         paired_rows, session_noise, several_session_rows,
                                         single_session_rows)


def test_block_values_are_log_medians_per_group():
    samples = np.array([[100, 7], [300, 7], [50, 0]])
    values = block_values(samples, np.array([1, 1, 0]))
    assert values.tolist() == [[math.log(50), 0.0], [math.log(math.sqrt(3e4)), math.log(7)]]


def test_median_errors_hand_computed():
    # logs 0, log 1.1, log 0.9, 0: median 0, MAD = median(0, .0953, .1054, 0) = .0477
    mad = (math.log(1.1) + 0.0) / 2
    error = median_errors(np.array([[100], [110], [90], [100]]), np.zeros(4))[0, 0]
    assert error == pytest.approx(1.2533 * 1.4826 * mad / 2)
    assert median_errors(np.array([[5]]), np.zeros(1))[0, 0] == math.inf


def test_paired_rows_find_a_shift_and_bound_it():
    rng = np.random.default_rng(5)
    control = rng.normal(0.0, 0.02, (16, 2))
    test = control + rng.normal(0.0, 0.005, (16, 2)) + [0.0, math.log(1.05)]
    out = paired_rows(control, test)
    assert out["low"][1] < 0.05 < out["high"][1] and out["p_value"][1] < 1e-3
    assert out["low"][0] < 0.0 < out["high"][0]


def test_session_noise_leaves_out_outliers_and_within_session_error():
    ratios = [0.0, 0.02, -0.02, 0.01, -0.01, 0.3]  # the outlier (a real change) is left out
    noise = session_noise(ratios, [0.005] * 6)
    assert noise.shift == pytest.approx(0.005)  # median of the six
    assert noise.df == 4
    variance = np.var([0.0, 0.02, -0.02, 0.01, -0.01], ddof=1)  # 0.00025
    assert noise.spread == pytest.approx(math.sqrt(variance - 0.005 ** 2))
    assert not session_noise([0.1] * 4, [0.0] * 4).measured


def test_single_session_rows_test_against_the_common_shift():
    scipy_stats = pytest.importorskip("scipy.stats")
    noise = SessionNoise(shift=0.1, spread=0.02, df=10)
    out = single_session_rows([0.1, 0.2], [0.0, 0.0], noise, common=True)
    assert out["p_value"][0] == 1.0
    assert out["p_value"][1] == pytest.approx(2 * scipy_stats.t.sf(5.0, 10))
    whole = single_session_rows([0.1], [0.0], noise, common=False)
    assert whole["p_value"][0] == pytest.approx(2 * scipy_stats.t.sf(5.0, 10))
    unmeasured = SessionNoise(0.0, 0.0, measured=False)
    assert single_session_rows([0.1], [0.05], unmeasured, True)["p_value"][0] == \
        pytest.approx(math.erfc(2 / math.sqrt(2)))


def test_several_session_rows_t_test_hand_computed():
    scipy_stats = pytest.importorskip("scipy.stats")
    control = np.array([[0.0], [0.02], [-0.02]])
    test = np.array([[0.1], [0.12], [0.08]])
    out = several_session_rows(control, test, moderate=False)
    expected = scipy_stats.ttest_ind(test[:, 0], control[:, 0]).pvalue
    assert out["p_value"][0] == pytest.approx(expected)
    assert out["estimate"][0] == pytest.approx(math.expm1(0.1))
