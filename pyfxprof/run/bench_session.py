"""One callable under pyfxprof.bench(): checked on its inputs, its blocks sized, timed round
by round until its target or budget (so several can take turns: bench_grid), then its
Measurement."""

from __future__ import annotations

import contextlib
import time
from typing import Callable

import numpy as np
import torch

from ..capture.flops import FlopMeter
from ..capture.inputs import BoundInputs, input_tensors
from ..data.measurement import Measurement
from ..stats.order_statistics import median_interval, relative_half_width
from ..stats.warmup import warmup_runs
from ..errors import ArgumentError, PyfxprofError, first_line
from ..timing.device_events import ensure_cuda_runtime
from ..timing.call_timer import gc_paused
from .bench_timers import (BASELINE_CHOICES, BlockTimer, block_size, call_once,
                           python_timed_blocks)

#: Fewest steady blocks before a run may stop at its target.
MIN_BLOCKS = 10


class BenchSession:
    """`fn(*args, **kwargs)` being benchmarked. `__init__` makes two untimed calls (a
    one-line error when fn raises, or when one call exceeds the budget), sizes the blocks and
    runs one untimed block; each `round()` times more blocks (a tenth of those so far, within
    the budget left) and sets `stopped` to "target" or "budget" when done; `measurement()`
    builds the Measurement. `options`: bench()'s target, budget, baseline, device_events,
    profile.

    Example:
        >>> s = BenchSession(torch.add, (torch.ones(4), torch.ones(4)), {}, "add", {},
        ...                  dict(target=0.5, budget=0.05))
        >>> while s.stopped is None:
        ...     s.round()
        >>> s.measurement().median > 0
        True
    """

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, label: str, params: dict,
                 options: dict) -> None:
        self.fn, self.args, self.kwargs, self.label, self.params = fn, args, kwargs, label, params
        self.target, self.budget = options.get("target", 0.01), options.get("budget", 2.0)
        self.profile = options.get("profile")
        estimate = _first_calls(fn, args, kwargs, self.budget, label)
        self.device = _device_of(args, kwargs)
        events = options.get("device_events")
        events = self.device.startswith("cuda") if events is None else events
        if events:
            ensure_cuda_runtime()
        self.timer = BlockTimer(fn, args, kwargs, block_size(estimate * 1e9), events)
        self.timer.run(1)  # one untimed block: the generated code's and the caches' first run
        self.timer.take()
        baseline = options.get("baseline")
        self.baselines = BASELINE_CHOICES[baseline] if baseline else ()
        self.taken: list[tuple] = []
        self.found: dict[str, list[np.ndarray]] = {name: [] for name in self.baselines}
        self.blocks, self.step, self.elapsed = 0, 1, 0.0
        self.stopped: str | None = None

    def round(self) -> None:
        """Time `step` more blocks (each baseline's blocks in turn after them; the cyclic GC
        paused, as timeit pauses it), then stop or size the next round."""
        started = time.perf_counter()
        with gc_paused():
            self.timer.run(self.step)
            found = python_timed_blocks(self.baselines, self.fn, self.args, self.kwargs,
                                        self.timer.calls, self.step)
        self.taken.append(self.timer.take())
        for name, values in found.items():
            self.found[name].extend(values)
        self.elapsed += time.perf_counter() - started
        self.blocks += self.step
        if self.blocks >= MIN_BLOCKS and _precision(self._block_ns()) <= self.target:
            self.stopped = "target"
        elif self.elapsed >= self.budget:
            self.stopped = "budget"
        else:
            left = (self.budget - self.elapsed) / (self.elapsed / self.blocks)
            self.step = max(1, min(self.blocks // 10, int(left)))

    def _block_ns(self) -> np.ndarray:
        return np.concatenate([part[1] for part in self.taken])

    def measurement(self, node_profile: Callable | None = None) -> Measurement:
        """The Measurement of the blocks so far (FLOPs counted and, with `node_profile`
        (bench's), the per-node profile taken now, untimed)."""
        block_ns, fn, args, kwargs = self._block_ns(), self.fn, self.args, self.kwargs
        device = (None if self.taken[0][2] is None
                  else np.vstack([part[2] for part in self.taken]))
        return Measurement(
            self.label, np.vstack([part[0] for part in self.taken]), block_ns,
            _warmup_blocks(block_ns), self.timer.overhead_ns, self.target, self.budget,
            self.stopped or "budget", torch.get_num_threads(), self.device,
            _flops_of(fn, args, kwargs), device,
            {name: np.vstack(blocks) for name, blocks in self.found.items()},
            None if node_profile is None else node_profile(fn, args, kwargs, self.profile,
                                                           self.label), dict(self.params))


def _warmup_blocks(block_ns: np.ndarray) -> int:
    """Leading blocks slower than the rest (data/warmup.py)."""
    return int(warmup_runs(block_ns)[0])


def _precision(block_ns: np.ndarray) -> float:
    """Relative half-width of the median's interval over the steady blocks (inf: too few)."""
    steady = block_ns[_warmup_blocks(block_ns):]
    if len(steady) < MIN_BLOCKS:
        return float("inf")
    return relative_half_width(median_interval(steady), float(np.median(steady)))


def _first_calls(fn: Callable, args: tuple, kwargs: dict, budget: float, label: str) -> float:
    """Two untimed calls: a clear error when `fn` raises on its inputs or one call takes more
    than the budget; the quicker call's seconds (to size the blocks)."""
    durations = []
    for _ in range(2):
        try:
            _, seconds = call_once(fn, args, kwargs)
        except Exception as error:
            raise PyfxprofError(f"{label} raised on its inputs: {type(error).__name__}: "
                                f"{first_line(error)}; fix the call or its inputs") from None
        if seconds > budget:
            raise ArgumentError(f"budget={budget:g} s is too small for one call of {label} "
                                f"({seconds:.3g} s): give a larger budget")
        durations.append(seconds)
    return min(durations)


def _device_of(args: tuple, kwargs: dict) -> str:
    """Device of the first tensor in the arguments (capture.inputs.input_tensors' walk;
    "cpu" without one)."""
    tensors = input_tensors(BoundInputs(args, kwargs))
    return str(tensors[0].device) if tensors else "cpu"


def _flops_of(fn: Callable, args: tuple, kwargs: dict) -> int | None:
    """FLOPs of one untimed call (torch.utils.flop_counter); None when unknown (0 counted,
    e.g. element-wise ops, or the counter failed)."""
    try:
        with FlopMeter() as meter:
            fn(*args, **kwargs)
        return int(meter.total()) or None
    except Exception:  # the count is optional: the timed calls already ran fine
        return None


def rng_kept() -> contextlib.AbstractContextManager:
    """torch's CPU generator (and the CUDA ones in use) restored after the calls (bench()'s,
    a replay's)."""
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    return torch.random.fork_rng(devices=range(torch.cuda.device_count()) if cuda else [])
