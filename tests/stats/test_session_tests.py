import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyfxprof.stats.session_tests import (CURVE_ROWS, MIN_NOISE_ROWS, SessionNoise, _spread,
                                         block_values, median_errors, paired_rows,
                                         run_dispersion, session_noise, several_session_rows,
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


@settings(max_examples=60, deadline=None)
@given(long_jitter=st.floats(0.03, 0.08), short_jitter=st.floats(0.2, 0.8),
       longs=st.integers(1, 5), shorts=st.integers(2, 15), seed=st.integers(0, 2 ** 16))
def test_a_long_rows_dispersion_is_its_own_beside_jittering_short_rows(
        long_jitter, short_jitter, longs, shorts, seed):
    """500 us rows that jitter by `long_jitter` (log SD) run to run beside short rows of a
    few us that jitter by far more: a long row's dispersion is about its own (the short
    rows' departures say nothing of the run); with 3 long rows or more, a slowdown of whole
    runs (the host's slow phases: half the runs 1.5x) is taken out of it (the other rows
    carry it: the row's departure less theirs, within 2x its own where the short rows
    jitter by 50% or less)."""
    rng = np.random.default_rng(seed)
    runs = 200
    durations = np.r_[np.full(longs, 5e5), rng.uniform(2e3, 15e3, shorts)]
    jitter = np.r_[np.full(longs, long_jitter), np.full(shorts, short_jitter)]
    samples = durations * np.exp(rng.normal(0.0, jitter, (runs, len(durations))))
    assert 0.65 * long_jitter < run_dispersion(samples)[0] < 1.4 * long_jitter
    if longs >= 3 and short_jitter <= 0.5:
        slow_runs = samples * np.where(rng.random((runs, 1)) < 0.5, 1.5, 1.0)
        assert run_dispersion(slow_runs)[0] < 2.0 * long_jitter   # as they are: about 0.3


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(MIN_NOISE_ROWS + 1, CURVE_ROWS - 1), change=st.floats(-1.0, 1.0),
       spread=st.floats(0.01, 0.3), seed=st.integers(0, 2 ** 16))
def test_a_rows_own_change_never_widens_its_noise_in_a_small_model(rows, change, spread, seed):
    """Fewer than CURVE_ROWS rows: whatever a row's own change (a node doubled: +0.69), its
    noise is the spread of the other rows around their median, or the departure it shares
    with the row nearest it in duration: never more than that row's, so the change does
    not hide itself."""
    rng = np.random.default_rng(seed)
    ratios = rng.normal(0.1, spread, rows)
    errors = np.full(rows, 0.01)
    durations = np.r_[5e5, np.geomspace(2e3, 15e3, rows - 1)]
    ratios[0] += change
    noise = session_noise(ratios, errors, durations).spread_at([5e5])[0]
    rest = np.delete(ratios, 0) - np.median(np.delete(ratios, 0))
    others, _ = _spread(rest, errors[1:])
    own = ratios[0] - np.median(np.delete(ratios, 0))
    shared = min(abs(rest[-1]), abs(own)) if rest[-1] * own > 0 else 0.0   # the 15 us row
    assert noise == pytest.approx(max(others, math.sqrt(max(shared ** 2 - 0.01 ** 2, 0.0))))
    assert noise <= max(others, abs(rest[-1])) * (1 + 1e-12)
