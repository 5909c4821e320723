"""The native runs x nodes table the timed calls write into, and its hand-over as RunTimings.

Every executor stores one duration per node and run straight into the final runs x nodes
array (no record chunks, no copies): the memory a profile needs is known before it runs.
"""

from __future__ import annotations

import os

import numpy as np

from .native import _C
from ..errors import PyfxprofError
from .durations import RunTimings

#: Bytes a run needs besides its nodes' samples (begin, end, first call, last call end).
RUN_BYTES = 32


def available_memory_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None where unknown).

    Example:
        >>> available_memory_bytes() is None or available_memory_bytes() > 0
        True
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_fits_in_memory(runs: int, nodes: int, arrays: int = 1) -> int:
    """Bytes `runs` runs of `nodes` nodes need (`arrays` runs x nodes int64 arrays: 2 with
    device samples); a one-line PyfxprofError when that exceeds the memory available now.

    Example:
        >>> check_fits_in_memory(10, 5)
        720
        >>> check_fits_in_memory(10**12, 1000)
        Traceback (most recent call last):
        ...
        pyfxprof.errors.PyfxprofError: ...
    """
    needed = runs * (nodes * 8 * arrays + RUN_BYTES)
    available = available_memory_bytes() if needed else None  # (nothing to fit: no read)
    if available is not None and needed > available:
        fitting = max(available // (nodes * 8 * arrays + RUN_BYTES), 0)
        raise PyfxprofError(f"{runs:,} runs x {nodes:,} nodes need about {needed / 2**30:.1f} "
                            f"GiB of samples but {available / 2**30:.1f} GiB is available; "
                            f"use at most {fitting:,} runs")
    return needed


class RunTable:
    """A native SampleTable for `nodes` nodes: open a row per run, take the rows at the end.
    `spare` more columns, which no timed call writes, are reserved beside them for rows a
    Profile adds after the runs (the user's call: data/outside_graph.py), so adding one costs
    no copy of the samples; take() hands them over as RunTimings.spare.

    Example:
        >>> table = RunTable(2)
        >>> calls = _C.timed_calls(table.native)
        >>> calls.set(0, abs); calls.set(1, abs)
        >>> table.begin(); _ = [calls.timed(k, -1) for k in range(2)]; table.end()
        >>> table.take().intervals.shape
        (1, 2)
    """

    def __init__(self, nodes: int, spare: int = 0) -> None:
        self.nodes = nodes
        self.native = _C.SampleTable(nodes, spare)
        self._kept: list[dict] = []  # complete runs taken out by failed_node()

    def reserve(self, runs: int, arrays: int = 1) -> None:
        """Room for `runs` more runs, allocated now, or a one-line error when it cannot fit."""
        check_fits_in_memory(runs, self.native.nodes, arrays)
        try:
            self.native.reserve(self.native.rows + runs)
        except MemoryError:
            raise PyfxprofError(f"could not allocate {runs:,} runs x {self.nodes:,} nodes of "
                                "samples; lower runs") from None

    def begin(self) -> None:
        """Open this thread's row for one run."""
        try:
            self.native.begin_run()
        except RuntimeError as error:
            raise PyfxprofError(str(error)) from None

    def end(self) -> None:
        """Close this thread's row."""
        self.native.end_run()

    def abandon(self) -> None:
        """Leave the open row incomplete (its run raised)."""
        self.native.abandon_run()

    def clear(self) -> None:
        """Forget every run so far (e.g. after warm-up)."""
        self.native.clear()
        self._kept = []

    def failed_node(self, names: list[str]) -> str | None:
        """After a run raised: the name of its first node without a duration (the nodes run
        in order, so the one that raised), or None when every node finished. The runs stay
        for `take()` (which counts the failed one as incomplete): a loop that catches the
        model's exception keeps its window.

        Example:
            >>> table = RunTable(2)
            >>> calls = _C.timed_calls(table.native); calls.set(0, abs)
            >>> table.begin(); _ = calls.timed(0, 1); table.abandon()
            >>> table.failed_node(["a", "b"])
            'b'
            >>> table.take().incomplete_runs  # the failed run
            1
        """
        taken = self.native.take()
        samples = taken["samples"][:, :self.nodes]
        self._kept.append(taken)
        if not samples.shape[0]:
            return names[0] if names else None
        missing = np.flatnonzero(samples[-1] < 0)
        return names[int(missing[0])] if missing.size and missing[0] < len(names) else None

    def take(self) -> RunTimings:
        """The complete runs (raw durations, overhead not subtracted; between_nodes: each
        run's time from its first timed call's begin to its last one's end that no timed call
        covers); the table is empty afterwards. Only an incomplete run costs a copy.
        """
        taken, kept, self._kept = self.native.take(), self._kept, []
        if kept:
            taken = {key: np.concatenate([part[key] for part in kept] + [column])
                     for key, column in taken.items()}
        wide = taken["samples"]
        complete = _complete(taken, wide[:, :self.nodes])
        if not complete.all():
            wide = wide[complete]
        samples = wide[:, :self.nodes]
        begins = taken["begin_ns"][complete]
        between = (taken["last_call_end_ns"][complete] - taken["first_call_ns"][complete]
                   - samples.sum(axis=1))
        return RunTimings(samples, taken["end_ns"][complete] - begins, begins,
                          int((~complete).sum()), between,
                          spare=wide if wide.shape[1] > self.nodes else None)


def _complete(taken: dict, samples: np.ndarray) -> np.ndarray:
    """Mask of the taken runs that ended with every node timed (`samples`: the nodes'
    columns, without the spare ones)."""
    complete = taken["end_ns"] >= 0
    if samples.size:
        complete &= (samples >= 0).all(axis=1)
    return complete
