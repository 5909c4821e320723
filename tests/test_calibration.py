"""Tests of mark-overhead calibration (values plausible, structure right; no speed thresholds)."""

import numpy as np

from pyfxprof.timing.calibration import summarise, calibrate_codegen, calibrate_paired


def test_interquartile_mean_ignores_outliers_and_is_not_quantised():
    samples = np.array([20, 20, 30, 30, 30, 20, 30, 20, 5000, 1])
    c = summarise(samples, "test")
    assert c.overhead_ns == 25.0 and c.samples == 10


def test_calibrations_measure_a_positive_cost():
    for calibration in (calibrate_codegen(marks=16, repeats=20), calibrate_paired(repeats=200)):
        assert calibration.overhead_ns > 0 and calibration.samples > 0
        assert set(calibration.as_meta()) == {"overhead_ns", "overhead_iqr_ns",
                                              "overhead_samples", "overhead_method"}
    assert calibrate_codegen(marks=16, repeats=20).samples == 15 * 20
