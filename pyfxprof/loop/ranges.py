"""User ranges (`with pyfxprof.record_range("data"):`): begin/end marks per named range,
recorded only while a Profiler is recording, paired back into spans and turned into per-step Profile rows.

A range marks nothing unless some Profiler is in a RECORD step, so ranges left in library
code cost one flag check and never fill the record buffer. Each name gets one id from a block
reserved in the process-wide RECORDER; the Profiler collects that block at each window end.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..timing.native import _C
from ..data.profile import Profile
from ..errors import PyfxprofError
from ..timing.calibration import summarise
from ..timing.recorder import RECORDER, Records

#: Distinct range names a process may use (ids reserved in one block on first use).
MAX_NAMES = 1 << 16

_recording = 0  # number of Profilers currently in a RECORD step


class _Registry:
    """Range name <-> id, ids taken from one RECORDER block reserved on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.first_id: int | None = None
        self.ids: dict[str, int] = {}
        self.names: list[str] = []

    def id_of(self, name: str) -> int:
        found = self.ids.get(name)
        if found is not None:
            return found
        with self._lock:
            if name not in self.ids:
                if len(self.names) >= MAX_NAMES:
                    raise PyfxprofError(f"more than {MAX_NAMES} distinct range names; reuse "
                                        "names (e.g. 'data', not f'data {step}')")
                if self.first_id is None:
                    self.first_id = RECORDER.allocate(MAX_NAMES)
                self.ids[name] = self.first_id + len(self.names)
                self.names.append(name)
            return self.ids[name]

    def name_of(self, range_id: int) -> str:
        assert self.first_id is not None, "a range id before any name took one"
        return self.names[range_id - self.first_id]


_REGISTRY = _Registry()


class Range(contextlib.ContextDecorator):
    """A named user range: a context manager or a decorator (``pyfxprof.record_range``).

    While a Profiler records, entering marks RANGE_BEGIN and leaving marks RANGE_END with
    the name's id; otherwise both are a flag check. Ranges nest, and the same name may nest
    in itself. A range shows in the window's Profile as a row (op "range", target = name).

    Example:
        >>> with Range("data"):
        ...     batch = [1, 2, 3]
        >>> @Range("load")
        ... def load():
        ...     return 1
        >>> load()
        1
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise PyfxprofError(f"a range name must be a non-empty string, got {name!r}")
        self.name = name
        self._id = _REGISTRY.id_of(name)
        self._began = False

    def _recreate_cm(self) -> "Range":
        """A fresh range per decorated call, so recursion and threads do not share state."""
        fresh = Range.__new__(Range)
        fresh.name, fresh._id, fresh._began = self.name, self._id, False
        return fresh

    def __enter__(self) -> "Range":
        if _recording:
            _C.mark_kind(self._id, _C.KIND_RANGE_BEGIN)
            self._began = True
        return self

    def __exit__(self, *exc_info) -> Literal[False]:  # exceptions go on
        if self._began and _recording:
            _C.mark_kind(self._id, _C.KIND_RANGE_END)
        self._began = False
        return False

    def __repr__(self) -> str:
        return f"pyfxprof.record_range({self.name!r})"


def start_recording() -> None:
    """Make ranges record (a Profiler entering an active window).

    Example:
        >>> start_recording(); stop_recording()
    """
    global _recording
    _recording += 1


def stop_recording() -> None:
    """Undo one start_recording (a Profiler leaving an active window).

    Example:
        >>> start_recording(); stop_recording()
    """
    global _recording
    _recording = max(0, _recording - 1)


def collect() -> Records:
    """Drain every pending range record (all names); empty when no range was ever named.

    Example:
        >>> len(collect()) >= 0
        True
    """
    if _REGISTRY.first_id is None:
        return Records(np.empty(0, np.int64), np.empty(0, np.uint32), np.empty(0, np.uint32),
                       np.empty(0, np.uint16))
    return RECORDER.collect(_REGISTRY.first_id, MAX_NAMES)


@dataclass
class Spans:
    """Closed ranges: name id, begin time (profiler-clock ns) and duration (ns), int64."""

    ids: np.ndarray
    begin_ns: np.ndarray
    duration_ns: np.ndarray


def pair_spans(records: Records) -> Spans:
    """Match each RANGE_BEGIN with its RANGE_END per thread and name (innermost first).

    An END without a BEGIN, or a BEGIN still open when the records were collected, is
    dropped. Vectorised: no Python loop per record.

    Example:
        >>> B, E = _C.KIND_RANGE_BEGIN, _C.KIND_RANGE_END
        >>> r = Records(np.array([0, 1, 5, 9, 12]), np.full(5, 7, np.uint32),
        ...             np.ones(5, np.uint32), np.array([E, B, B, E, E], np.uint16))
        >>> pair_spans(r).duration_ns.tolist()
        [11, 4]
    """
    r = records.select((records.kind == _C.KIND_RANGE_BEGIN) | (records.kind == _C.KIND_RANGE_END))
    order = np.lexsort((r.id, r.thread))  # stable: buffer (= per-thread time) order kept
    ids, thread = r.id[order].astype(np.int64), r.thread[order].astype(np.int64)
    stamps, begin = r.timestamp_ns[order], r.kind[order] == _C.KIND_RANGE_BEGIN
    n = len(ids)
    starts = np.ones(n, dtype=bool)
    starts[1:] = (ids[1:] != ids[:-1]) | (thread[1:] != thread[:-1])
    group = np.cumsum(starts)
    delta = np.where(begin, 1, -1)
    running = np.cumsum(delta)
    first = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    depth_after = running - (running - delta)[first]
    level = np.where(begin, depth_after, depth_after + 1)  # a pair shares its nesting level
    by_level = np.lexsort((np.arange(n), level, group))
    b, e = by_level[:-1], by_level[1:]
    pairs = begin[b] & ~begin[e] & (group[b] == group[e]) & (level[b] == level[e])
    b, e = b[pairs], e[pairs]
    return Spans(ids[b], stamps[b].astype(np.int64), (stamps[e] - stamps[b]).astype(np.int64))


_calibrated: float | None = None


def range_overhead_ns(repeats: int = 200) -> float:
    """Calibrated duration of an empty range (enter, two marks, exit), cached per process.

    Example:
        >>> 0 < range_overhead_ns(repeats=20) < 100_000
        True
    """
    global _calibrated
    if _calibrated is None:
        probe = Range.__new__(Range)
        probe.name, probe._id, probe._began = "calibration", RECORDER.allocate(1), False
        start_recording()
        try:
            for _ in range(repeats):
                with probe:
                    pass
        finally:
            stop_recording()
        spans = pair_spans(RECORDER.collect(probe._id, 1))
        if len(spans.ids) == 0:  # a full buffer dropped them: subtract nothing
            return 0.0
        _calibrated = summarise(spans.duration_ns, "empty range").overhead_ns
    return _calibrated


def _step_of(step_starts: np.ndarray, stamps: np.ndarray) -> np.ndarray:
    """Index of the step each time stamp falls in (-1 before the first step)."""
    return np.searchsorted(step_starts, stamps, side="right") - 1


def per_run_columns(spans: Spans, step_starts: np.ndarray, run_starts: np.ndarray,
                    overhead_ns: float, window_run_starts: np.ndarray | None = None,
                    ) -> tuple[np.ndarray, np.ndarray, int]:
    """(range ids, int64 (runs, ranges) durations, spans left out) for a window's runs.

    A span belongs to the step it began in; a range's time in a step is the sum of its spans
    there, minus ``overhead_ns`` each (clamped at 0). The step's first run (model call)
    carries it, the step's later runs get 0; spans of steps without a run are left out.
    ``window_run_starts`` (default: ``run_starts``) are the starts of every run of the window
    when ``run_starts`` are only some of them (one call group of several): a run carries its
    step's ranges only if it is the step's first run among them all.

    Example:
        >>> s = Spans(np.array([3, 3]), np.array([10, 12]), np.array([100, 50]))
        >>> ids, cols, lost = per_run_columns(s, np.array([0, 20]), np.array([11, 21]), 0.0)
        >>> ids.tolist(), cols.tolist(), lost
        ([3], [[150], [0]], 0)
    """
    durations = np.clip(np.rint(spans.duration_ns - overhead_ns), 0, None).astype(np.int64)
    span_step, run_step = _step_of(step_starts, spans.begin_ns), _step_of(step_starts, run_starts)
    ids, column = np.unique(spans.ids, return_inverse=True)
    sums = np.zeros((len(step_starts), len(ids)), dtype=np.int64)
    kept = span_step >= 0
    np.add.at(sums, (span_step[kept], column[kept]), durations[kept])
    window = run_starts if window_run_starts is None else np.asarray(window_run_starts)
    window_step = _step_of(step_starts, window)
    in_step = window_step >= 0
    first_start = np.full(len(step_starts), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_start, window_step[in_step], window[in_step].astype(np.int64))
    carries = (run_step >= 0) & (run_starts == first_start[np.clip(run_step, 0, None)])
    columns = np.where(carries[:, None], sums[np.clip(run_step, 0, None)], 0).astype(np.int64)
    lost = int(np.count_nonzero(~np.isin(span_step, window_step[in_step])))
    return ids, columns, lost


def _filler(column: pd.Series):
    """The value of an extra nodes column for a range row: 0, () or ""."""
    if pd.api.types.is_numeric_dtype(column):
        return column.dtype.type(0)
    return () if len(column) and isinstance(column.iloc[0], tuple) else ""


def range_rows(nodes: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """``nodes`` followed by one row per range name (op "range", target and name = the name).

    Example:
        >>> nodes = pd.DataFrame({"index": [0], "name": ["relu"], "op": ["call_module"],
        ...     "target": ["relu"], "module_path": ["relu"], "module_type": ["ReLU"],
        ...     "module_stack": [("relu",)]})
        >>> range_rows(nodes, ["data"])[["index", "name", "op"]].values.tolist()
        [[0, 'relu', 'call_module'], [1, 'range:data', 'range']]
    """
    identity: dict[Hashable, Any] = {
        "index": len(nodes) + np.arange(len(names)), "name": [f"range:{n}" for n in names],
        "op": "range", "target": names, "module_path": "", "module_type": "range",
        "module_stack": [()] * len(names)}
    rows = pd.DataFrame({c: identity[c] if c in identity else [_filler(column)] * len(names)
                         for c, column in nodes.items()})
    return pd.concat([nodes, rows.astype(nodes.dtypes.to_dict())], ignore_index=True)


def with_ranges(profile: Profile, records: Records, step_starts: np.ndarray,
                window_run_starts: np.ndarray | None = None) -> Profile:
    """``profile`` plus one row per user range recorded in its window (see per_run_columns;
    ``window_run_starts``: the starts of all the window's runs, when ``profile`` has some).

    Coverage and run totals stay those of the model's nodes. Adds meta ``ranges`` (names),
    ``range_overhead_ns`` (subtracted per span) and ``ranges_left_out`` (spans in steps
    without a model call). Returns ``profile`` itself when no range closed in the window.

    Example:
        >>> prof = with_ranges(prof, collect(), np.array(step_starts))  # doctest: +SKIP
    """
    spans = pair_spans(records)
    if len(spans.ids) == 0 or profile.run_starts is None:
        return profile
    overhead = range_overhead_ns()
    ids, columns, lost = per_run_columns(spans, step_starts, profile.run_starts, overhead,
                                         window_run_starts)
    names = [_REGISTRY.name_of(int(i)) for i in ids]
    meta = {**profile.meta, "ranges": names, "range_overhead_ns": overhead,
            "ranges_left_out": lost}
    return Profile(range_rows(profile.nodes, names), np.hstack([profile.samples, columns]),
                   profile.run_totals, meta, run_starts=profile.run_starts,
                   run_noise=profile.run_noise)
