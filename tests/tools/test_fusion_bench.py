"""Tests for pyfxprof.tools.fusion_bench. No timing thresholds: machines are noisy."""

import numpy as np
import pytest
import torch
from torch import nn

from pyfxprof.tools.fusion_bench import FusionBenchmark, benchmark_fusion
from pyfxprof.tools.fusion import FusionReport


def tiny_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).eval()


def test_benchmark_returns_raw_samples_per_variant():
    bench = benchmark_fusion(tiny_model(), (torch.randn(1, 3, 16, 16),), runs=4, warmup=1)
    assert list(bench.samples_ns) == ["unfused", "fused", "fused+script"]
    for samples in bench.samples_ns.values():
        assert samples.dtype == np.int64 and samples.shape == (4,) and (samples > 0).all()
    assert bench.report.fused == [("0", "1")]
    assert bench.max_abs_diff["fused"] < 1e-5
    assert bench.script_error is None


def test_format_names_every_variant_and_speedup():
    bench = benchmark_fusion(tiny_model(), (torch.randn(1, 3, 16, 16),), runs=3, warmup=0)
    text = bench.format()
    assert str(bench) == text
    for word in ("unfused", "fused", "fused+script", "speed-up", "max abs diff", "3 runs"):
        assert word in text


def make_bench(unfused, fused, script_error=None) -> FusionBenchmark:
    return FusionBenchmark(
        samples_ns={"unfused": np.array(unfused), "fused": np.array(fused)},
        max_abs_diff={"unfused": 0.0, "fused": 1e-7},
        report=FusionReport(fused=[("conv", "bn")]),
        runs=len(unfused),
        warmup=0,
        threads=1,
        script_error=script_error,
    )


def test_verdict_is_honest_when_fusion_does_not_help():
    bench = make_bench([100, 110, 90, 105, 95], [99, 108, 92, 104, 96])
    assert bench.speedup("fused") == pytest.approx(100 / 99)
    assert "within noise" in bench.format()
    slower = make_bench([100, 101, 99], [150, 151, 149])
    assert "slower than unfused" in slower.format()
    faster = make_bench([200, 201, 199], [100, 101, 99])
    assert "2.000x faster" in faster.format()
    assert "warning: noisy" not in faster.format()
    noisy = make_bench([100, 200, 300, 400], [100, 200, 300, 400])
    assert "warning: noisy measurements (IQR up to 60% of the median)" in noisy.format()


def test_script_failure_is_reported_and_row_left_out():
    bench = make_bench([100, 101], [90, 91], script_error="RuntimeError: nope")
    text = bench.format()
    assert "fused+script: not measured, torch.jit.script failed: RuntimeError: nope" in text
    assert not any(line.startswith("fused+script ") for line in text.splitlines())


def test_reducers_handle_small_n():
    one, five = make_bench([5], []), make_bench([1, 2, 3, 4, 5], [3])
    assert one.median_ns("unfused") == 5.0 and one.iqr_ns("unfused") == 0.0
    assert np.isnan(one.median_ns("fused")) and one.iqr_ns("fused") == 0.0
    assert five.iqr_ns("unfused") == 2.0 and five.median_ns("unfused") == 3.0


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="runs >= 1"):
        benchmark_fusion(tiny_model(), (torch.randn(1, 3, 8, 8),), runs=0)
