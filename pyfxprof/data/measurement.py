"""The result of pyfxprof.bench(): one callable's times (int64 ns, timer cost already
subtracted) in blocks of back-to-back calls, and the statistics read from them.

The blocks are the statistical unit: calls inside one block share caches, frequency and
neighbours, so they are not independent; blocks are. The median is of the blocks' time per
call, and its 95% interval the distribution-free (binomial order-statistic) interval of that
median (stats/order_statistics.py). docs/bench.md says what each figure means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import served_methods
from ..stats.node_statistics import iqr
from ..stats.order_statistics import median_interval, relative_half_width


@served_methods
@dataclass(repr=False, eq=False)
class Measurement:
    """Times of one callable, from pyfxprof.bench(), in blocks of back-to-back calls.

    ``block_ns``: each block's native time (the timer cost ``overhead_ns`` of each call
    subtracted): its calls, the release of each call's result and the few bytecodes between
    calls; ``samples``: each call's own native time, blocks x calls (int64, timer cost
    subtracted; the release of its result falls after it). ``median``, ``mean``, ``iqr`` and
    ``interval`` are of the blocks' time per call (``per_call``), as torch.utils.benchmark's
    are of its blocks; ``call_median`` and ``call_iqr`` of the calls alone.
    ``warmup_blocks``: leading blocks detected as warm-up and left out of every statistic;
    ``target``: the relative half-width of the median's 95% interval asked for; ``stopped``:
    "target" when reached, "budget" when ``budget_s`` ran out first; ``flops``: FLOPs of one
    call (None: unknown); ``device_samples``: CUDA-event ns of each call (blocks x calls) on
    CUDA tensors; ``baseline``: per-call ns of the same calls timed with Python timers around
    each call (blocks x calls) or around each block (blocks x 1), by timer name (bench(...,
    baseline="perf_counter")); ``profile``: the per-node Profile of an fx-traceable function;
    ``params``: the grid cell. ``str()`` is a few lines, ``_repr_html_`` a table
    (views/bench_text.py).

    Example:
        >>> m = Measurement("f", np.array([[100, 102], [101, 99]]), np.array([260, 240]))
        >>> m.median, m.call_median, m.calls, m.blocks
        (125.0, 100.5, 4, 2)
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS; tests/test_typing.py
        # checks each declaration against the serving function's signature
        def __str__(self) -> str: ...
        def __repr__(self) -> str: ...
        def _repr_html_(self) -> str: ...

    label: str
    samples: np.ndarray
    block_ns: np.ndarray
    warmup_blocks: int = 0
    overhead_ns: float = 0.0
    target: float = 0.01
    budget_s: float = 0.0
    stopped: str = "target"
    threads: int = 1
    device: str = "cpu"
    flops: int | None = None
    device_samples: np.ndarray | None = None
    baseline: dict[str, np.ndarray] = field(default_factory=dict)
    profile: Any = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def steady(self) -> np.ndarray:
        """Per-call ns after the warm-up blocks, blocks x calls."""
        return np.asarray(self.samples)[self.warmup_blocks:]

    @property
    def block_size(self) -> int:
        """Back-to-back calls per block."""
        return int(np.asarray(self.samples).shape[1])

    @property
    def blocks(self) -> int:
        """Steady blocks (the statistics' unit)."""
        return int(self.steady.shape[0])

    @property
    def calls(self) -> int:
        """Steady calls timed."""
        return int(self.steady.size)

    @property
    def per_call(self) -> np.ndarray:
        """Each steady block's ns per call (its time / its calls)."""
        return np.asarray(self.block_ns, dtype=np.float64)[self.warmup_blocks:] / self.block_size

    @property
    def median(self) -> float:
        """Median of the steady blocks' ns per call."""
        return _or_nan(np.median, self.per_call)

    @property
    def mean(self) -> float:
        """Mean of the steady blocks' ns per call."""
        return _or_nan(np.mean, self.per_call)

    @property
    def iqr(self) -> float:
        """Interquartile range (ns) of the steady blocks' ns per call."""
        return _or_nan(iqr, self.per_call)

    @property
    def call_median(self) -> float:
        """Median ns of the steady calls alone (each call's own interval)."""
        return _or_nan(np.median, self.steady)

    @property
    def call_iqr(self) -> float:
        """Interquartile range (ns) of the steady calls alone."""
        return _or_nan(iqr, self.steady)

    @property
    def interval(self) -> tuple[float, float]:
        """95% interval (ns) of the median (median_interval of the blocks' ns per call)."""
        return median_interval(self.per_call)

    @property
    def precision(self) -> float:
        """The interval's half-width as a fraction of the median (inf: unbounded)."""
        return relative_half_width(self.interval, self.median)

    @property
    def calls_per_second(self) -> float:
        """1 s / the median."""
        return 1e9 / self.median if self.median > 0 else math.nan

    @property
    def flops_per_second(self) -> float | None:
        """FLOPs of a call / the median (None when the FLOPs are unknown)."""
        if not self.flops or not self.median > 0:
            return None
        return self.flops * 1e9 / self.median

    @property
    def device_median(self) -> float | None:
        """Median CUDA-event ns of the steady calls (None without device timing)."""
        if self.device_samples is None:
            return None
        return _or_nan(np.median, np.asarray(self.device_samples)[self.warmup_blocks:])

    def baseline_medians(self) -> dict[str, float]:
        """Median per-call ns of each baseline timer, over the steady blocks.

        Example:
            >>> m = Measurement("f", np.full((2, 2), 100), np.full(2, 200),
            ...                 baseline={"t": np.array([[150], [160]])})
            >>> m.baseline_medians()
            {'t': 155.0}
        """
        return {name: _or_nan(np.median, np.asarray(values)[self.warmup_blocks:])
                for name, values in self.baseline.items()}

    def differs_from(self, other: "Measurement") -> bool:
        """True when the 95% intervals of the two medians do not overlap.

        Example:
            >>> a = Measurement("a", np.full((8, 2), 100), np.full(8, 200))
            >>> b = Measurement("b", np.full((8, 2), 90), np.full(8, 180))
            >>> a.differs_from(b), a.differs_from(a)
            (True, False)
        """
        (low, high), (other_low, other_high) = self.interval, other.interval
        return high < other_low or other_high < low


def _or_nan(statistic, values) -> float:
    """`statistic(values)` as a float, NaN when there are no values."""
    values = np.asarray(values)
    return float(statistic(values)) if values.size else math.nan
