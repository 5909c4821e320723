"""Wall time of profile()'s steps, kept in meta["wall_s"] and shown by `pyfxprof profile
--timings` (which adds the imports, loading the model and rendering)."""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator

#: Steps of profile() in the order they run: key in meta["wall_s"] -> what --timings calls it.
STEPS = {
    "capture": "capture (trace, ladder)",
    "analysis": "analysis run (shapes, FLOPs)",
    "instrument": "instrument and calibrate",
    "warmup": "warm-up runs",
    "user_call": "your call's Python breakdown",
    "timed_runs": "timed runs",
}


#: Every step --timings shows, in order: the command's own around profile()'s STEPS.
LABELS = {"imports": "imports (torch, pyfxprof, the command)",
          "model": "loading the model and inputs", **STEPS,
          "other": "the rest of profile() (checks, building the Profile)",
          "rendering": "rendering and writing outputs"}


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


def format_timings(seconds: dict[str, float]) -> str:
    """A table of wall seconds per step (`seconds` in order), the total and the share outside
    the timed runs.

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
    total = sum(seconds.values())
    outside = total - seconds.get("timed_runs", 0.0)
    lines.append(f"  {'total':<{width}}{total:7.3f}  (outside the timed runs: {outside:.3f})")
    return "\n".join(lines)
