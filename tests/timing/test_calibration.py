"""Tests of calibration and overhead subtraction (values plausible, arithmetic exact; no speed thresholds)."""

import numpy as np

from pyfxprof.timing.calibration import (Calibration, calibrate_timed_calls, consecutive_intervals,
                                         subtract_overhead, summarise)
from pyfxprof.timing.durations import RunTimings


def test_interquartile_mean_ignores_outliers_and_is_not_quantised():
    samples = np.array([20, 20, 30, 30, 30, 20, 30, 20, 5000, 1])
    c = summarise(samples, "test")
    assert c.overhead_ns == 25.0 and c.samples == 10


def test_timed_call_calibration_measures_a_positive_cost_from_every_call():
    calibration = calibrate_timed_calls(calls=16, repeats=20)
    assert calibration.overhead_ns > 0 and calibration.samples == 16 * 20
    assert set(calibration.as_meta()) == {"overhead_ns", "overhead_iqr_ns",
                                          "overhead_samples", "overhead_method"}


def test_correction_is_in_place_rounded_and_clamped():
    intervals = np.array([[130, 20], [60, 31]], dtype=np.int64)
    timings = RunTimings(intervals, np.array([400, 50]), np.array([0, 1]), 0)
    corrected = Calibration(30.4, 0.0, 1, "test").correct(timings, 2)
    assert corrected.intervals is intervals  # no copy of the samples
    assert intervals.tolist() == [[100, 0], [30, 1]]
    assert corrected.run_totals.tolist() == [339, 0]


def test_subtract_overhead_rounds_the_overhead_once():
    assert subtract_overhead(np.array([10, 11]), 0.6).tolist() == [9, 10]


def test_consecutive_intervals_within_groups_only():
    class R:
        timestamp_ns = np.array([0, 4, 100, 107, 200])
    assert consecutive_intervals(R(), 2).tolist() == [4, 7]
