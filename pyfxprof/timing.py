"""Turning drained records into per-run, per-node durations (vectorised, no loop per record)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _C
from .recorder import Records


@dataclass
class RunTimings:
    """Raw durations (ns, mark overhead not yet subtracted) of the complete runs found."""

    intervals: np.ndarray    # int64 (runs, n): node k = boundary k+1 minus boundary k
    run_totals: np.ndarray   # int64 (runs,): RUN_END minus RUN_BEGIN, or last minus first mark
    run_starts: np.ndarray   # int64 (runs,): timestamp of each run's first mark
    incomplete_runs: int     # runs that lost a record (full buffer) and were left out


def _thread_sorted(records: Records) -> Records:
    order = np.argsort(records.thread, kind="stable")  # keeps per-thread order
    return Records(records.timestamp_ns[order], records.id[order], records.thread[order],
                   records.kind[order])


def _complete_sequences(records: Records, first_id: int, length: int, step: int = 1) -> np.ndarray:
    """Indices (runs, length) of record windows whose ids are first_id, +step, ... on one thread."""
    ids = records.id.astype(np.int64)
    starts = np.flatnonzero(ids == first_id)
    starts = starts[starts + length <= len(ids)]
    if len(starts) == 0:
        return np.empty((0, length), dtype=np.int64)
    window = starts[:, None] + np.arange(length)[None, :]
    expected = first_id + step * np.arange(length)
    same_thread = (records.thread[window] == records.thread[starts][:, None]).all(axis=1)
    complete = (ids[window] == expected[None, :]).all(axis=1) & same_thread
    return window[complete]


def boundary_timings(records: Records, first_id: int, n_nodes: int) -> RunTimings:
    """Durations from codegen marks: ids first_id..first_id+n per run (n+1 boundaries).

    Example:
        >>> r = Records(np.array([0, 5, 9]), np.array([1, 2, 3], np.uint32),
        ...             np.ones(3, np.uint32), np.zeros(3, np.uint16))
        >>> boundary_timings(r, 1, 2).intervals.tolist()
        [[5, 4]]
    """
    marks = _thread_sorted(records.select(records.kind == _C.KIND_MARK))
    window = _complete_sequences(marks, first_id, n_nodes + 1)
    stamps = marks.timestamp_ns[window]
    intervals = np.diff(stamps, axis=1)
    run_totals = _run_totals(records, first_id, stamps)
    runs_started = int(np.count_nonzero(marks.id == first_id))
    return RunTimings(intervals, run_totals, stamps[:, 0].copy(), runs_started - len(window))


def paired_timings(records: Records, first_id: int, n_nodes: int) -> RunTimings:
    """Durations from begin/end marks per node: node k's ids are first_id+2k and first_id+2k+1."""
    marks = _thread_sorted(records.select(records.kind == _C.KIND_MARK))
    window = _complete_sequences(marks, first_id, 2 * n_nodes)
    stamps = marks.timestamp_ns[window]
    intervals = stamps[:, 1::2] - stamps[:, 0::2]
    run_totals = _run_totals(records, first_id, stamps)
    runs_started = int(np.count_nonzero(marks.id == first_id))
    return RunTimings(intervals, run_totals, stamps[:, 0].copy(), runs_started - len(window))


def _run_totals(records: Records, run_id: int, stamps: np.ndarray) -> np.ndarray:
    """RUN_END - RUN_BEGIN per complete run (matched by time), else first-to-last mark."""
    fallback = stamps[:, -1] - stamps[:, 0] if stamps.size else np.empty(0, dtype=np.int64)
    is_run = records.id == run_id
    begins = np.sort(records.timestamp_ns[is_run & (records.kind == _C.KIND_RUN_BEGIN)])
    ends = np.sort(records.timestamp_ns[is_run & (records.kind == _C.KIND_RUN_END)])
    if len(begins) == 0 or len(begins) != len(ends) or len(stamps) == 0:
        return fallback.astype(np.int64)
    # The run enclosing each complete window: the last begin before its first mark.
    which = np.searchsorted(begins, stamps[:, 0], side="right") - 1
    enclosing = (which >= 0) & (ends[np.clip(which, 0, None)] >= stamps[:, -1])
    totals = np.where(enclosing, ends[np.clip(which, 0, None)] - begins[np.clip(which, 0, None)],
                      fallback)
    return totals.astype(np.int64)
