"""Timing leaf modules with forward pre/post hooks, for models torch.fx cannot trace.

Every call of a hooked module is one node, in call order: a module called twice gives two
nodes (`relu`, `relu_1`), as FX does. The pre-hook marks the call's begin just before
`forward`, the post-hook its end right after; hooks exist only while a `hooked` block runs
(analysis run, timed runs), so the model is left as it was.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import torch

from .. import _C
from ..capture.analysis import describe, tensor_bytes
from ..capture.flops import FlopMeter
from ..capture.inputs import BoundInputs
from ..capture.tracing import Capture
from ..errors import PyfxprofError, first_line
from .calibration import Calibration, consecutive_intervals, summarise
from .durations import RunTimings
from .failures import MarkLayout, failed_label
from .recorder import RECORDER, ChunkedCollector, Records

Leaves = list[tuple[str, torch.nn.Module]]


@contextlib.contextmanager
def hooked(leaves: Leaves, pre: Callable[[int], Callable],
           post: Callable[[int], Callable]) -> Iterator[None]:
    """Within the block, leaf k has forward pre-hook `pre(k)` (run last) and forward hook
    `post(k)` (run first); all are removed on exit, even after an error.

    Example:
        >>> calls, relu = [], torch.nn.ReLU()
        >>> with hooked([("", relu)], lambda k: lambda m, a: calls.append(("pre", k)),
        ...             lambda k: lambda m, a, out: calls.append(("post", k))):
        ...     _ = relu(torch.zeros(1))
        >>> calls, len(relu._forward_pre_hooks), len(relu._forward_hooks)
        ([('pre', 0), ('post', 0)], 0, 0)
    """
    handles = []
    try:
        for k, (_, module) in enumerate(leaves):
            handles.append(module.register_forward_pre_hook(pre(k)))
            handles.append(module.register_forward_hook(post(k), prepend=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


@dataclass
class HookAnalysis:
    """What one untimed, hooked run of the model saw.

    calls: leaf index of each call, in begin order (the nodes). events: the expected mark
    sequence of a run (2k begins and 2k+1 ends leaf k). begin_pos, end_pos: each call's
    positions in `events`. info: per call input_shapes, output_shapes, out_bytes, flops.
    """

    calls: list[int]
    events: np.ndarray
    begin_pos: np.ndarray
    end_pos: np.ndarray
    info: list[dict[str, Any]]
    flops: int


class _CallRecorder:
    """Hooks recording every call's events, shapes, output bytes and FLOPs."""

    def __init__(self, meter: FlopMeter) -> None:
        self.meter, self.events, self.calls, self.info, self._open = meter, [], [], [], []

    def pre(self, k: int) -> Callable:
        def hook(_module, inputs) -> None:
            self._open.append(len(self.calls))
            self.calls.append(k)
            self.info.append({"input_shapes": describe(inputs), "begin": len(self.events),
                              "flops": self.meter.total()})
            self.events.append(2 * k)
        return hook

    def post(self, k: int) -> Callable:
        def hook(_module, _inputs, output) -> None:
            index = next(i for i in reversed(self._open) if self.calls[i] == k)
            self._open.remove(index)  # the latest open call of this module
            call = self.info[index]
            call.update(output_shapes=describe(output), out_bytes=tensor_bytes(output),
                        flops=self.meter.total() - call["flops"], end=len(self.events))
            self.events.append(2 * k + 1)
        return hook


def analyse_hooks(model: torch.nn.Module, leaves: Leaves, args: tuple,
                  kwargs: dict | None = None) -> HookAnalysis:
    """Run `model(*args, **kwargs)` once untimed with recording hooks on `leaves`.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())
        >>> found = analyse_hooks(model, [("0", model[0]), ("1", model[1])], (torch.zeros(3, 4),))
        >>> found.calls, found.events.tolist(), found.info[0]["flops"]
        ([0, 1], [0, 1, 2, 3], 48)
    """
    try:
        with FlopMeter() as meter:
            recorder = _CallRecorder(meter)
            with hooked(leaves, recorder.pre, recorder.post):
                model(*args, **(kwargs or {}))
    except Exception as error:
        shown = describe(args) + (f" and {describe(kwargs)}" if kwargs else "")
        raise PyfxprofError(f"{type(model).__name__} failed on inputs {shown}: "
                            f"{type(error).__name__}: {first_line(error)} — check the input "
                            "shapes") from None
    ended = [k for k, call in enumerate(recorder.info) if "end" in call]  # not: raised, caught
    info = [{key: recorder.info[k][key]
             for key in ("input_shapes", "output_shapes", "out_bytes", "flops")} for k in ended]
    return HookAnalysis([recorder.calls[k] for k in ended],
                        np.asarray(recorder.events, dtype=np.int64),
                        np.array([recorder.info[k]["begin"] for k in ended], dtype=np.int64),
                        np.array([recorder.info[k]["end"] for k in ended], dtype=np.int64),
                        info, meter.total())


def hooks_or_whole(model: torch.nn.Module, captured: Capture,
                   bound: BoundInputs) -> tuple[Capture, HookAnalysis]:
    """Analyse a hooks capture; when no hooked module ran, time the whole model instead.

    Example:
        >>> from pyfxprof.capture.tracing import fallback_capture
        >>> model = torch.nn.Sequential(torch.nn.ReLU())
        >>> bound = BoundInputs((torch.zeros(1),))
        >>> hooks_or_whole(model, fallback_capture(model, (), []), bound)[0].mode
        'hooks'
    """
    analysis = analyse_hooks(model, captured.leaves, bound.args, bound.kwargs)
    if analysis.calls or captured.mode == "whole":
        return captured, analysis
    note = f"no hooked module of {type(model).__name__} ran — timing it whole"
    whole = Capture(None, "whole", captured.notes + [note], [("", model)])
    return whole, analyse_hooks(model, whole.leaves, bound.args, bound.kwargs)


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
    device = None  # no CUDA event timing: hooks time the host only

    def __init__(self, model: torch.nn.Module, leaves: Leaves, analysis: HookAnalysis,
                 kwargs: dict | None = None) -> None:
        self.model, self.leaves, self.analysis = model, leaves, analysis
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
        """The leaf the last run raised in (None: after the last), read from its marks."""
        return failed_label(self.layout, names)

    def reset(self, runs: int = 0) -> None:
        self._collector.reset()

    def device_samples(self) -> None:
        """Hooks time the host only: no device samples."""
        return None

    def timings(self) -> RunTimings:
        """The runs since the last reset, one calibrated interval per hooked call subtracted."""
        return self.calibration.correct(self._collector.timings(), self.calls_per_run)
