"""Counters of the process read once before and once after profile()'s timed runs, per run:
how long its threads waited for a core (here: runnable but not running, Linux's schedstat
run-queue delay; when the runs waited, a node's time is partly the scheduler's:
docs/roofline.md, "Waiting for cores") and its minor page faults (run.first_touch)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Callable, Iterator

#: Where Linux lists this process's threads, each with its schedstat (on-CPU ns, run-queue
#: wait ns, time slices).
TASKS = "/proc/self/task"


def core_wait_ns() -> int | None:
    """The run-queue wait so far (ns) of this process's threads alive now, summed; None where
    Linux's schedstat is not available.

    Example:
        >>> wait = core_wait_ns()
        >>> wait is None or wait >= 0
        True
    """
    try:
        threads = os.listdir(TASKS)
    except OSError:
        return None
    total, read = 0, False
    for thread in threads:
        try:
            with open(f"{TASKS}/{thread}/schedstat", "rb") as stats:
                total += int(stats.read().split()[1])
            read = True
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile
            continue
    return total if read else None


@dataclass
class PerRun:
    """A counter's growth per run over a block of runs (counted_per_run); None until the
    block ends, and where the counter cannot be read."""

    per_run: float | None = None


@contextlib.contextmanager
def counted_per_run(read: Callable[[], int | None], runs: int) -> Iterator[PerRun]:
    """`read()`'s growth over the block, per run of its `runs` (at least 0: a thread that
    ended during the block takes its count with it); one read before and one after.

    Example:
        >>> counts = iter([10, 70])
        >>> with counted_per_run(lambda: next(counts), 3) as count:
        ...     pass
        >>> count.per_run
        20.0
    """
    count = PerRun()
    before = read()
    yield count
    after = read() if before is not None else None
    if before is not None and after is not None and runs > 0:
        count.per_run = max(after - before, 0) / runs
