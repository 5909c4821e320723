"""Timing leaf modules with forward pre/post hooks, for models no graph capture sees inside.

The pre-hook marks a call's begin just before `forward`, the post-hook its end right after;
hooks exist only while a `hooked` block runs (the executor's `with`), so the model is left as
it was. The analysis run that fixes the expected call sequence is pyfxprof.capture.hook_analysis.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch

from .native import _C
from ..capture.hook_analysis import HookAnalysis, Leaves, hooked
from .calibration import Calibration, consecutive_intervals, summarise
from .durations import RunTimings
from .failures import MarkLayout, failed_label
from .recorder import RECORDER, ChunkedCollector, Records

if TYPE_CHECKING:
    from .device_events import DeviceEvents


class _Passthrough(torch.nn.Module):
    def forward(self, x: Any) -> Any:
        return x


def _marking_hooks(first_id: int) -> tuple[Callable, Callable]:
    """Factories of hooks marking ids first_id + 2k (begin) and first_id + 2k + 1 (end)."""
    mark = _C.mark

    def pre(k: int) -> Callable:
        begin = first_id + 2 * k
        return lambda _module, _inputs: mark(begin)

    def post(k: int) -> Callable:
        end = first_id + 2 * k + 1
        return lambda _module, _inputs, _output: mark(end)

    return pre, post


def calibrate_hooks(repeats: int = 2000) -> Calibration:
    """Interval between the marks of a hooked module whose forward does nothing.

    Example:
        >>> 0 < calibrate_hooks(repeats=50).overhead_ns < 100_000
        True
    """
    first_id, module = RECORDER.allocate(2), _Passthrough()
    with hooked([("", module)], *_marking_hooks(first_id)):
        for _ in range(repeats):
            module(None)
    records = RECORDER.collect(first_id, 2)
    return summarise(consecutive_intervals(records, 2), "hooks: empty hooked module")


def _run_bounds(records: Records, run_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(begin and end timestamps of the runs, mask of the records on the runs' thread)."""
    is_run = records.id == run_id
    is_begin = is_run & (records.kind == _C.KIND_RUN_BEGIN)
    first = np.flatnonzero(is_begin)[:1]
    same = records.thread == (records.thread[first[0]] if len(first) else 0)
    begins = np.sort(records.timestamp_ns[is_begin & same])
    ends = np.sort(records.timestamp_ns[is_run & same & (records.kind == _C.KIND_RUN_END)])
    runs = min(len(begins), len(ends))
    return begins[:runs], ends[:runs], same & ~is_run


def hook_timings(records: Records, first_id: int, run_id: int,
                 analysis: HookAnalysis) -> RunTimings:
    """Per-call durations of the runs whose marks are exactly the analysed sequence.

    Example:
        >>> r = Records(np.array([0, 1, 4, 10]), np.array([7, 1, 2, 7], np.uint32),
        ...             np.ones(4, np.uint32),
        ...             np.array([_C.KIND_RUN_BEGIN, 0, 0, _C.KIND_RUN_END], np.uint16))
        >>> a = HookAnalysis([0], np.array([0, 1]), np.array([0]), np.array([1]), [{}], 0)
        >>> t = hook_timings(r, 1, 7, a)
        >>> t.intervals.tolist(), t.run_totals.tolist(), t.incomplete_runs
        ([[3]], [10], 0)
    """
    begins, ends, on_thread = _run_bounds(records, run_id)
    marks = records.select(on_thread & (records.kind == _C.KIND_MARK))
    order = np.argsort(marks.timestamp_ns, kind="stable")
    stamps, ids = marks.timestamp_ns[order], marks.id[order].astype(np.int64)
    start = np.searchsorted(stamps, begins, side="left")
    length = len(analysis.events)
    counted = np.searchsorted(stamps, ends, side="right") - start == length
    window = start[counted, None] + np.arange(length)[None, :]
    exact = (ids[window] == first_id + analysis.events[None, :]).all(axis=1)
    runs = np.flatnonzero(counted)[exact]
    window = stamps[window[exact]]
    intervals = window[:, analysis.end_pos] - window[:, analysis.begin_pos]
    return RunTimings(intervals.astype(np.int64), (ends[runs] - begins[runs]).astype(np.int64),
                      begins[runs].astype(np.int64), int(len(begins) - len(runs)))


class HooksExecutor:
    """Runs the model itself with marking hooks on its leaves; use it as a context manager
    around the runs (`with executor: ...`) so the hooks are removed afterwards."""

    mode = "hooks"
    device: DeviceEvents | None = None  # no CUDA event timing: hooks time the host only

    def __init__(self, model: torch.nn.Module, leaves: Leaves, analysis: HookAnalysis,
                 kwargs: dict | None = None) -> None:
        #: What a run calls: the model, or the call a Profiler's call group times (its forward).
        self.model: Callable[..., Any] = model
        self.leaves, self.analysis = leaves, analysis
        self.kwargs = kwargs or {}  # keywords of every call, besides the positional args
        self.first_id = RECORDER.allocate(2 * len(leaves) + 1)
        self.run_id = self.first_id + 2 * len(leaves)
        self.layout = MarkLayout(self.first_id, 2 * len(leaves) + 1, 2,
                                 [path or type(module).__name__ for path, module in leaves])
        self.calibration: Calibration = calibrate_hooks()
        self.calls_per_run = len(analysis.calls)  # one calibrated interval per hooked call
        self._stack = contextlib.ExitStack()
        self._collector = ChunkedCollector(
            self.first_id, 2 * len(leaves) + 1, len(analysis.events),
            lambda records: hook_timings(records, self.first_id, self.run_id, analysis))

    def __enter__(self) -> "HooksExecutor":
        self._stack.enter_context(hooked(self.leaves, *_marking_hooks(self.first_id)))
        return self

    def __exit__(self, *exc_info) -> None:
        self._stack.close()

    def run(self, args: tuple, kwargs: dict | None = None) -> Any:
        """One timed call `model(*args, **kwargs)` (kwargs default: the constructor's)."""
        _C.mark_kind(self.run_id, _C.KIND_RUN_BEGIN)
        output = self.model(*args, **(self.kwargs if kwargs is None else kwargs))
        _C.mark_kind(self.run_id, _C.KIND_RUN_END)
        self._collector.run_done()
        return output

    def failed_node(self, names: list[str]) -> str | None:
        """The leaf the last run raised in (None: outside every leaf), read from its marks; the
        complete runs before it stay for timings() (the failed one counts as incomplete)."""
        records = RECORDER.collect(self.layout.first_id, self.layout.count)
        self._collector.add(records)
        return failed_label(self.layout, names, records)

    def reset(self, runs: int = 0) -> None:
        self._collector.reset()

    def device_samples(self) -> None:
        """Hooks time the host only: no device samples."""
        return None

    def timings(self) -> RunTimings:
        """The runs since the last reset, one calibrated interval per hooked call subtracted."""
        return self.calibration.correct(self._collector.timings(), self.calls_per_run)
