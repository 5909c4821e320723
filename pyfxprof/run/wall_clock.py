"""Wall time of profile()'s steps, kept in meta["wall_s"] and shown by `pyfxprof profile
--timings` (which adds the interpreter's start, the imports, loading the model and rendering).

Two steps are timed work: the timed runs (each made inside the user's call), and the timing of
the user's plain call after them (run.user_call: the denominator of the profile). The rest is
the cost of profiling; format_timings states it both without and with the call's timing."""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any, Callable, Iterator

#: Steps of profile() in the order they run: key in meta["wall_s"] -> what --timings calls it.
STEPS = {
    "capture": "capture (trace, ladder)",
    "analysis": "analysis run (shapes, FLOPs)",
    "instrument": "instrument and calibrate",
    "warmup": "warm-up runs",
    "timed_runs": "timed runs",
    "user_call": "your call: warm-up and Python breakdown",
    "call_timed": "your call, timed after the runs",
    "alone": "the top rows' nodes timed alone",
}
#: The steps that are timed work: what is "outside the timed runs" leaves them out.
TIMED = ("timed_runs", "call_timed")


#: Every step --timings shows, in order: the command's own around profile()'s STEPS.
LABELS = {"start": "interpreter start (process created to pyfxprof's main)",
          "imports": "imports (torch, pyfxprof, the command)",
          "model": "loading the model and inputs", **STEPS,
          "other": "the rest of profile() (checks, building the Profile)",
          "rendering": "rendering and writing outputs"}


def process_age_s() -> float | None:
    """Seconds since this process was created (Linux: its start time in /proc, to the clock
    tick, 10 ms), or None where unknown; --timings' "start" step is this age at cli.main's
    first line, so its table covers the process's whole wall time up to the table.

    Example:
        >>> age = process_age_s()
        >>> age is None or age > 0
        True
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()  # after the (command name)
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime, ticks
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux
        return None


class StepClock:
    """Accumulates the wall seconds of named steps.

    Example:
        >>> clock = StepClock()
        >>> with clock.step("capture"):
        ...     pass
        >>> list(clock.seconds)
        ['capture']
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Adds the block's wall time to step `name`."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - started)

    def timed(self, name: str, function: Callable[..., Any], *args: Any) -> Any:
        """function(*args), its wall time added to step `name`."""
        with self.step(name):
            return function(*args)

    def add(self, name: str, seconds: float) -> None:
        """Adds `seconds` to step `name`."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def moved(self, name: str, into: str, seconds: float | None) -> None:
        """Moves `seconds` (measured inside step `name`) to step `into`; None moves nothing.

        Example:
            >>> clock = StepClock(); clock.add("capture", 3.0); clock.moved("capture", "analysis", 1.0)
            >>> clock.seconds
            {'capture': 2.0, 'analysis': 1.0}
        """
        if seconds is not None:
            self.add(name, -seconds)
            self.add(into, seconds)


def outside_timed_runs(seconds: dict[str, float]) -> float:
    """Wall seconds of the steps that are not timed work (TIMED): the cost of profiling.

    Example:
        >>> outside_timed_runs({"warmup": 4.0, "timed_runs": 12.0, "call_timed": 11.0})
        4.0
    """
    return sum(value for name, value in seconds.items() if name not in TIMED)


def format_timings(seconds: dict[str, float]) -> str:
    """A table of wall seconds per step (`seconds` in order), the total and the part outside
    the timed work (the timed runs and, when there is one, the timing of the user's call;
    also given with that timing counted in).

    Example:
        >>> print(format_timings({"warmup": 4.0, "timed_runs": 12.0}))
        wall time       seconds
          warm-up runs    4.000
          timed runs     12.000
          total          16.000  (outside the timed runs: 4.000)
    """
    labels = LABELS
    width = max(len(labels.get(name, name)) for name in seconds) + 2
    lines = [f"{'wall time':<{width + 2}}seconds"]
    lines += [f"  {labels.get(name, name):<{width}}{value:7.3f}" for name, value in seconds.items()]
    total, outside = sum(seconds.values()), outside_timed_runs(seconds)
    call = "" if "call_timed" not in seconds else (
        f"; with your call's timing: {outside + seconds['call_timed']:.3f}")
    lines.append(f"  {'total':<{width}}{total:7.3f}  (outside the timed runs: {outside:.3f}{call})")
    return "\n".join(lines)
