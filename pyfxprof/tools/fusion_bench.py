"""Benchmark of the Conv/BatchNorm fusion pass: unfused vs fused vs fused under torch.jit.script.

Variants are timed interleaved in one process (round-robin, rotating the order every run) so
that drift (thermal, frequency, neighbours on a shared machine) hits all of them equally. Raw
per-run samples are kept; median and IQR are derived, as in torch.utils.benchmark.

Example:
    >>> bench = benchmark_fusion(model.eval(), (torch.randn(5, 3, 224, 224),), runs=10)  # doctest: +SKIP
    >>> print(bench)  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..data.units import time_unit
from ..errors import ArgumentError, first_line
from ..stats.node_statistics import iqr
from ..timing.call_timer import gc_paused, timed_calls
from .fusion import FusionReport, fuse_conv_bn, max_abs_difference

__all__ = ["FusionBenchmark", "benchmark_fusion"]

UNFUSED, FUSED, SCRIPTED = "unfused", "fused", "fused+script"
NOISY = 0.10  # relative IQR above which the table carries a warning


@dataclass
class FusionBenchmark:
    """Result of `benchmark_fusion`: raw per-run wall times (int64 ns) per variant.

    `samples_ns` maps variant name ("unfused", "fused", and "fused+script" when the fused
    model scripts) to one time per run; `max_abs_diff` maps each variant to the max abs
    difference of its outputs vs the original model; `script_error` says why scripting failed.

    Example:
        >>> bench = benchmark_fusion(model, (x,), runs=10)  # doctest: +SKIP
        >>> bench.speedup("fused")        # median(unfused) / median(fused)  # doctest: +SKIP
        1.08
        >>> print(bench.format())  # doctest: +SKIP
    """

    samples_ns: dict[str, np.ndarray]
    max_abs_diff: dict[str, float]
    report: FusionReport
    runs: int
    warmup: int
    threads: int
    script_error: str | None = None
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)

    def median_ns(self, variant: str) -> float:
        """Median time per run of `variant`, in ns (nan without runs). Example:
        `bench.median_ns("fused")`."""
        samples = self.samples_ns[variant]
        return float(np.median(samples)) if len(samples) else float("nan")

    def iqr_ns(self, variant: str) -> float:
        """IQR of the time per run of `variant`, in ns (0 with fewer than two runs). Example:
        `bench.iqr_ns("fused")`."""
        return iqr(self.samples_ns[variant])

    def speedup(self, variant: str) -> float:
        """Ratio of medians, unfused / `variant` (> 1 means faster). Example: `speedup("fused")`."""
        return self.median_ns(UNFUSED) / self.median_ns(variant)

    def noise(self, variant: str) -> float:
        """Relative spread, max of IQR/median of `variant` and of unfused.

        Example:
            >>> bench.noise("fused")      # 0.03 means speed-ups within 3% are noise  # doctest: +SKIP
        """
        return max(self.iqr_ns(v) / self.median_ns(v) for v in (UNFUSED, variant))

    def format(self) -> str:
        """The result as a table plus verdict lines. Example: `print(bench.format())`."""
        unit, scale = time_unit(self.median_ns(UNFUSED))
        lines = [
            f"Conv/BN fusion benchmark: wall time per forward call, {self.runs} runs "
            f"(+{self.warmup} warmup) interleaved round-robin, torch.inference_mode, "
            f"{self.threads} threads, inputs {self.input_shapes}",
            str(self.report),
            "",
            f"{'variant':<14}{'median ' + unit:>14}{'IQR ' + unit:>12}{'speed-up':>10}"
            f"{'max abs diff':>14}",
        ]
        for v in self.samples_ns:
            lines.append(
                f"{v:<14}{self.median_ns(v) / scale:>14.3f}{self.iqr_ns(v) / scale:>12.3f}"
                f"{self.speedup(v):>9.3f}x{self.max_abs_diff[v]:>14.3g}"
            )
        lines += [self._verdict(v) for v in self.samples_ns if v != UNFUSED]
        worst = max(self.iqr_ns(v) / self.median_ns(v) for v in self.samples_ns)
        if worst > NOISY:
            lines.append(
                f"warning: noisy measurements (IQR up to {worst:.0%} of the median); use more "
                "runs, a quieter machine, or fewer threads (torch.set_num_threads)"
            )
        if self.script_error:
            lines.append(f"{SCRIPTED}: not measured, torch.jit.script failed: {self.script_error}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()

    def _verdict(self, variant: str) -> str:
        s, noise = self.speedup(variant), self.noise(variant)
        if s < 1 - noise:
            return f"{variant}: slower than unfused ({s:.3f}x, noise ±{noise:.1%}); fusion did not help"
        if s < 1 + noise:
            return (
                f"{variant}: speed-up {s:.3f}x is within noise (±{noise:.1%}); "
                "fusion did not measurably help"
            )
        return f"{variant}: {s:.3f}x faster than unfused (beyond noise ±{noise:.1%})"


def benchmark_fusion(
    model: nn.Module, example_inputs: tuple, runs: int = 30, warmup: int = 5
) -> FusionBenchmark:
    """Time `model` unfused, fused (`fuse_conv_bn`) and fused under `torch.jit.script`.

    The model must be in eval mode (fusion refuses training mode). Variants are timed
    interleaved: in every run each variant is called once, in an order rotated per run. If
    scripting fails the reason is kept in `script_error` and that variant is left out.

    Example:
        >>> model = torchvision.models.resnet18(weights=None).eval()  # doctest: +SKIP
        >>> bench = benchmark_fusion(model, (torch.randn(5, 3, 224, 224),), runs=10, warmup=3)  # doctest: +SKIP
        >>> print(bench)  # doctest: +SKIP
    """
    if runs < 1 or warmup < 0:
        raise ArgumentError(f"need runs >= 1 and warmup >= 0, got runs={runs}, warmup={warmup}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    fused = fuse_conv_bn(model)
    report = fused.fusion_report
    assert isinstance(report, FusionReport)  # (fuse_conv_bn attaches it)
    variants = {UNFUSED: model, FUSED: fused}
    scripted, script_error = _script(fused)
    if scripted is not None:
        variants[SCRIPTED] = scripted
    diffs = {name: max_abs_difference(model, m, example_inputs) for name, m in variants.items()}
    samples = _time_interleaved(variants, example_inputs, runs, warmup)
    return FusionBenchmark(
        samples_ns=samples,
        max_abs_diff=diffs,
        report=report,
        runs=runs,
        warmup=warmup,
        threads=torch.get_num_threads(),
        script_error=script_error,
        input_shapes=[tuple(x.shape) for x in example_inputs if isinstance(x, torch.Tensor)],
    )


def _script(fused: nn.Module) -> tuple[nn.Module | None, str | None]:
    """torch.jit.script the fused model; (None, one-line reason) when it does not script."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecation and TorchScript type-system notices
            return torch.jit.script(fused), None
    except Exception as e:  # noqa: BLE001 - any scripting failure is reported, not raised
        return None, f"{type(e).__name__}: {first_line(e, empty='no message')}"


def _time_interleaved(variants: dict, inputs: tuple, runs: int, warmup: int) -> dict:
    """One call per variant per run, order rotated each run; int64 ns per call."""
    names = list(variants)
    samples = {name: np.empty(runs, dtype=np.int64) for name in names}
    with gc_paused(), torch.inference_mode():
        for i in range(warmup + runs):
            k = i % len(names)
            for name in names[k:] + names[:k]:
                elapsed = timed_calls(variants[name], inputs)[0]
                if i >= warmup:
                    samples[name][i - warmup] = elapsed
    return samples

