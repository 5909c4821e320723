"""`pyfxprof.sweep`: profile one model at several batch sizes and fit fixed + per-item costs."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import torch

from ..data.sweep_fit import SweepResult
from ..errors import PyfxprofError
from .runner import profile


def _checked_sizes(sizes: Iterable) -> list[int]:
    sizes = list(sizes)
    if any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes):
        raise PyfxprofError(f"sizes must be positive integers, got {sizes!r}")
    if len(set(sizes)) < 2:
        raise PyfxprofError(f"a sweep needs at least two different sizes, got {sizes!r}")
    return sorted(set(sizes))


def sweep(model: torch.nn.Module, make_inputs: Callable[[int], Any],
          sizes: Iterable[int] = (1, 2, 4, 8), runs: int = 20, warmup: int = 5,
          **profile_options) -> SweepResult:
    """Profile ``model`` on ``make_inputs(size)`` for each size and fit, per node, a robust
    line time = fixed + per_item x size (see pyfxprof.data.sweep_fit).

    ``profile_options`` go to pyfxprof.profile (mode, leaf_modules, capture, device, ...);
    the progress bar is off unless asked for.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
        >>> result = sweep(model, lambda n: (torch.randn(n, 8),), sizes=[1, 2, 4], runs=3,
        ...                warmup=1)
        >>> result.sizes, list(result.table()["name"])[0]
        ([1, 2, 4], '(run total)')
    """
    if not callable(make_inputs):
        raise PyfxprofError("make_inputs must be callable: make_inputs(size) -> the inputs")
    profile_options.setdefault("progress", False)
    profiles = {}
    for size in _checked_sizes(sizes):
        inputs = make_inputs(size)
        profiles[size] = profile(model, inputs, runs=runs, warmup=warmup, **profile_options)
    return SweepResult(profiles)
