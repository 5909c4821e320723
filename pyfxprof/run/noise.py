"""Cheap reads of the profiling thread's machine noise at run boundaries, never per node.

A read is ``getrusage(RUSAGE_THREAD)`` (context switches), the thread's CPU time
(``CLOCK_THREAD_CPUTIME_ID``, exact to the ns where getrusage's CPU times lag by up to a
scheduler tick) and the profiler clock: about 1.5 µs on a 2-core VM. ``pyfxprof.profile``
takes one read between consecutive runs (so a run's interval also holds the few hundred ns of
progress-bar bookkeeping after it); the loop API reads once when an active window opens and
once when it closes (loop/window.py). Without RUSAGE_THREAD (not Linux) the meter is off.
"""

from __future__ import annotations

import resource
import time

import numpy as np

from ..timing.native import _C

_THREAD = getattr(resource, "RUSAGE_THREAD", None)


class RunMeter:
    """Noise reads; ``between_reads()`` / ``paired()`` turn them into the Profile's
    ``run_noise`` rows (involuntary switches, voluntary switches, CPU ns, wall ns).

    Example:
        >>> meter = RunMeter()
        >>> meter.read(); meter.read(); meter.read()
        >>> meter.between_reads().shape, meter.paired().shape
        ((2, 4), (1, 4))
    """

    __slots__ = ("_reads", "enabled")

    def __init__(self) -> None:
        self._reads: list[tuple] = []
        self.enabled = _THREAD is not None

    def read(self) -> None:
        """One read: wall clock, involuntary and voluntary switches, thread CPU ns."""
        if self.enabled and _THREAD is not None:  # (enabled: there is RUSAGE_THREAD)
            usage = resource.getrusage(_THREAD)
            self._reads.append((_C.now_ns(), usage.ru_nivcsw, usage.ru_nvcsw,
                                time.thread_time_ns()))

    def clear(self) -> None:
        """Forget the reads so far (e.g. those of the warm-up runs)."""
        self._reads.clear()

    def between_reads(self) -> np.ndarray | None:
        """int64 (reads - 1, 4): one row per interval between consecutive reads."""
        return self._deltas(self._reads[:-1], self._reads[1:])

    def paired(self) -> np.ndarray | None:
        """int64 (reads // 2, 4): one row per (read 2k, read 2k + 1) pair."""
        return self._deltas(self._reads[0::2], self._reads[1::2])

    def _deltas(self, starts, stops) -> np.ndarray | None:
        if not self.enabled or len(self._reads) < 2:
            return None
        return np.array([(stop[1] - start[1], stop[2] - start[2], stop[3] - start[3],
                          stop[0] - start[0]) for start, stop in zip(starts, stops)],
                        dtype=np.int64)
