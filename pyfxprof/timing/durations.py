"""Turning drained records into per-run, per-node durations (vectorised, no loop per record)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _C
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
    run_totals = _run_totals(records, first_id, stamps, marks.thread[window[:, 0]])
    runs_started = int(np.count_nonzero(marks.id == first_id))
    return RunTimings(intervals, run_totals, stamps[:, 0].copy(), runs_started - len(window))


def paired_timings(records: Records, first_id: int, n_nodes: int) -> RunTimings:
    """Durations from begin/end marks per node: node k's ids are first_id+2k and first_id+2k+1."""
    marks = _thread_sorted(records.select(records.kind == _C.KIND_MARK))
    window = _complete_sequences(marks, first_id, 2 * n_nodes)
    stamps = marks.timestamp_ns[window]
    intervals = stamps[:, 1::2] - stamps[:, 0::2]
    run_totals = _run_totals(records, first_id, stamps, marks.thread[window[:, 0]])
    runs_started = int(np.count_nonzero(marks.id == first_id))
    return RunTimings(intervals, run_totals, stamps[:, 0].copy(), runs_started - len(window))


def _run_totals(records: Records, run_id: int, stamps: np.ndarray,
                stamp_threads: np.ndarray) -> np.ndarray:
    """RUN_END - RUN_BEGIN of the run enclosing each complete window on its own thread, else
    the window's first-to-last mark (runs on several threads may overlap in time)."""
    totals = stamps[:, -1] - stamps[:, 0] if stamps.size else np.empty(0, dtype=np.int64)
    is_run = records.id == run_id
    for thread in np.unique(stamp_threads):  # one pass per thread, not per record
        rows = np.flatnonzero(stamp_threads == thread)
        on_thread = is_run & (records.thread == thread)
        begins = np.sort(records.timestamp_ns[on_thread & (records.kind == _C.KIND_RUN_BEGIN)])
        ends = np.sort(records.timestamp_ns[on_thread & (records.kind == _C.KIND_RUN_END)])
        if len(begins) and len(ends):
            totals[rows] = _enclosing_totals(begins, ends, stamps[rows], totals[rows])
    return totals.astype(np.int64)


def _enclosing_totals(begins: np.ndarray, ends: np.ndarray, stamps: np.ndarray,
                      fallback: np.ndarray) -> np.ndarray:
    """For windows of one thread: end - begin of the last begin before the window's first mark
    and the first end after its last mark, when no other end or begin lies between them."""
    b = np.searchsorted(begins, stamps[:, 0], side="right") - 1
    e = np.searchsorted(ends, stamps[:, -1], side="left")
    b_at, e_at = np.clip(b, 0, len(begins) - 1), np.clip(e, 0, len(ends) - 1)
    next_begin = np.append(begins, np.iinfo(np.int64).max)[b_at + 1]
    previous_end = np.insert(ends, 0, np.iinfo(np.int64).min)[e_at]
    enclosed = ((b >= 0) & (e < len(ends)) & (next_begin > ends[e_at])
                & (previous_end < begins[b_at]))
    return np.where(enclosed, ends[e_at] - begins[b_at], fallback)
