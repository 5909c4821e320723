"""Tests of pyfxprof.data.measurement: the statistics of a Measurement, hand-computed."""

import math

import numpy as np
import pytest

from pyfxprof.data.measurement import Measurement
from pyfxprof.stats.order_statistics import relative_half_width


def test_too_few_values_give_an_unbounded_interval():
    assert Measurement("f", np.ones((5, 1)), np.arange(5)).interval == (-math.inf, math.inf)
    assert relative_half_width((-math.inf, math.inf), 100.0) == math.inf
    assert relative_half_width((90.0, 110.0), 0.0) == math.inf


def test_statistics_are_of_the_blocks_per_call_and_skip_warmup_blocks():
    samples = np.array([[900, 900], [100, 110], [100, 90], [120, 100]])
    block_ns = np.array([2000, 220, 200, 240])
    m = Measurement("f", samples, block_ns, warmup_blocks=1, flops=1000)
    assert m.blocks == 3 and m.calls == 6 and m.block_size == 2
    assert m.per_call.tolist() == [110.0, 100.0, 120.0]
    assert m.median == 110.0 and m.mean == 110.0
    assert m.iqr == pytest.approx(115.0 - 105.0)
    assert m.call_median == 100.0
    assert m.calls_per_second == pytest.approx(1e9 / 110)
    assert m.flops_per_second == pytest.approx(1000 * 1e9 / 110)


def test_unknown_flops_and_no_device_give_none():
    m = Measurement("f", np.full((3, 2), 10), np.full(3, 20))
    assert m.flops_per_second is None and m.device_median is None


def test_device_and_baseline_medians_skip_warmup_blocks():
    m = Measurement("f", np.full((3, 2), 10), np.full(3, 20), warmup_blocks=1,
                    device_samples=np.array([[99, 99], [5, 7], [6, 6]]),
                    baseline={"per call": np.array([[99, 99], [30, 40], [20, 20]]),
                              "per block": np.array([[99], [11], [13]])})
    assert m.device_median == 6.0
    assert m.baseline_medians() == {"per call": 25.0, "per block": 12.0}


def test_differs_when_intervals_do_not_overlap():
    rng = np.random.default_rng(0)
    def made(center):
        per_call = center + rng.normal(0, 1, 50)
        return Measurement("f", np.ones((50, 1)), per_call)
    a, b, c = made(100), made(100.2), made(120)
    assert a.differs_from(c) and c.differs_from(a)
    assert not a.differs_from(b)
