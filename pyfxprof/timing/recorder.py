"""Python side of the native record buffer: id ranges per consumer and draining records by range."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .native import _C
from .durations import RunTimings

_ID_LIMIT = 2**32


@dataclass
class Records:
    """Drained records of one id range, in buffer order (per-thread order is kept)."""

    timestamp_ns: np.ndarray  # int64
    id: np.ndarray            # uint32
    thread: np.ndarray        # uint32
    kind: np.ndarray          # uint16

    def select(self, mask: np.ndarray) -> "Records":
        """The records where `mask` is True."""
        return Records(self.timestamp_ns[mask], self.id[mask], self.thread[mask], self.kind[mask])

    def __len__(self) -> int:
        return len(self.id)


class Recorder:
    """Hands out disjoint id ranges and returns each consumer the records of its own range.

    Records of other ranges stay pending for their owners, so several profiled models (or
    user ranges) can share the one native buffer.

    Example:
        >>> first = RECORDER.allocate(2)
        >>> _C.mark(first); _C.mark(first + 1)
        >>> len(RECORDER.collect(first, 2))
        2
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_id = 1
        self._pending: Records | None = None
        self.dropped_total = 0       # records the native buffer dropped, since import
        self.discarded_pending = 0   # pending records nobody owns, or beyond the bound

    def allocate(self, count: int) -> int:
        """First id of a fresh range of `count` ids."""
        with self._lock:
            if self._next_id + count >= _ID_LIMIT:
                self._next_id = 1  # ids of finished sessions are long drained by now
            first = self._next_id
            self._next_id += count
            return first

    def collect(self, first_id: int, count: int) -> Records:
        """Drain the native buffer and return the records with ids in [first_id, first_id+count)."""
        with self._lock:
            pool = self._drain_into_pending()
            mine = (pool.id >= first_id) & (pool.id < first_id + count)
            self._keep_pending(pool.select(~mine))
            return pool.select(mine)

    def start(self) -> int:
        """Empty the native buffer (records stay pending for their owners) and return the
        drop count so far: a profile's own drops are ``dropped_total`` minus this.

        Example:
            >>> baseline = RECORDER.start()
            >>> RECORDER.dropped_total - baseline
            0
        """
        with self._lock:
            self._keep_pending(self._drain_into_pending())
            return self.dropped_total

    def _drain_into_pending(self) -> Records:
        drained = _C.drain()
        self.dropped_total += int(drained.pop("dropped"))
        fresh = Records(drained["timestamp_ns"], drained["id"], drained["thread"],
                        drained["kind"])
        return fresh if self._pending is None else _concat(self._pending, fresh)

    def _keep_pending(self, pool: Records) -> None:
        """Keep records for their owners, bounded: ids never handed out are dropped, and
        beyond one buffer's capacity the oldest go (counted in ``discarded_pending``)."""
        owned = (pool.id > 0) & (pool.id < self._next_id)
        limit = _C.buffer_stats()["capacity_records"]
        keep = np.flatnonzero(owned)[-limit:]
        self.discarded_pending += len(pool) - len(keep)
        self._pending = pool.select(keep) if len(keep) else None


def runs_between_collects(records_per_run: int) -> int:
    """How many runs of `records_per_run` records (plus the two run marks) fill a quarter of
    the native buffer: collect at least that often so it never comes near its cap.

    Example:
        >>> runs_between_collects(10**9)
        1
    """
    capacity = _C.buffer_stats()["capacity_records"]
    return max(1, capacity // (4 * (records_per_run + 2)))


class ChunkedCollector:
    """Collects one id range's records every few runs (well before the native buffer nears
    its cap) and turns each chunk into RunTimings with `to_timings`.

    Example:
        >>> first = RECORDER.allocate(1)
        >>> collector = ChunkedCollector(first, 1, 1, lambda r: RunTimings(
        ...     r.timestamp_ns[:, None], r.timestamp_ns * 0, r.timestamp_ns, 0))
        >>> _C.mark(first); collector.run_done(); _C.mark(first); collector.run_done()
        >>> collector.timings().intervals.shape
        (2, 1)
    """

    def __init__(self, first_id: int, count: int, records_per_run: int,
                 to_timings: Callable[[Records], RunTimings]) -> None:
        self.first_id, self.count, self.to_timings = first_id, count, to_timings
        self._runs_per_collect = runs_between_collects(records_per_run)
        self._uncollected_runs = 0
        self._chunks: list[RunTimings] = []

    def run_done(self) -> None:
        """Count one run; collect when enough runs are pending."""
        self._uncollected_runs += 1
        if self._uncollected_runs >= self._runs_per_collect:
            self._collect()

    def _collect(self) -> None:
        self.add(RECORDER.collect(self.first_id, self.count))

    def add(self, records: Records) -> None:
        """Take the range's records collected by the caller (e.g. after a failed run) as
        the next chunk."""
        self._uncollected_runs = 0
        self._chunks.append(self.to_timings(records))

    def reset(self) -> None:
        """Forget the runs so far."""
        self._collect()
        self._chunks = []

    def timings(self) -> RunTimings:
        """Every run since the last reset, in one RunTimings."""
        self._collect()
        chunks, self._chunks = self._chunks, []
        return RunTimings(np.concatenate([c.intervals for c in chunks]),
                          np.concatenate([c.run_totals for c in chunks]),
                          np.concatenate([c.run_starts for c in chunks]),
                          sum(c.incomplete_runs for c in chunks))


def _concat(a: Records, b: Records) -> Records:
    return Records(np.concatenate([a.timestamp_ns, b.timestamp_ns]), np.concatenate([a.id, b.id]),
                   np.concatenate([a.thread, b.thread]), np.concatenate([a.kind, b.kind]))


#: The process-wide recorder.
RECORDER = Recorder()
