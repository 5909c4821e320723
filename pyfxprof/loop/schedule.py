"""The wait/warmup/active/repeat step schedule of a profiling loop, with torch.profiler.schedule's
exact semantics and torch's ProfilerAction values."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from torch.profiler import ProfilerAction

from ..errors import PyfxprofError

#: The actions a schedule may return (torch's DEVICE_STOPPED is internal to torch.profiler).
ACTIONS = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
           ProfilerAction.RECORD_AND_SAVE)


@dataclass(frozen=True)
class Schedule:
    """A step -> ProfilerAction function; build it with :func:`schedule`.

    Example:
        >>> [a.name for a in map(schedule(wait=1, warmup=1, active=1), range(4))]
        ['NONE', 'WARMUP', 'RECORD_AND_SAVE', 'NONE']
    """

    wait: int
    warmup: int
    active: int
    repeat: int = 0
    skip_first: int = 0
    skip_first_wait: int = 0

    def __call__(self, step: int) -> ProfilerAction:
        if step < 0:
            raise PyfxprofError(f"step must be non-negative, got {step}")
        if step < self.skip_first:
            return ProfilerAction.NONE
        step -= self.skip_first
        if self.skip_first_wait != 0:
            step += self.wait
        cycle = self.wait + self.warmup + self.active
        if self.repeat > 0 and step >= self.repeat * cycle:
            return ProfilerAction.NONE
        position = step % cycle
        if position < self.wait:
            return ProfilerAction.NONE
        if position < self.wait + self.warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Schedule:
    """A schedule with torch.profiler.schedule's semantics and step numbering.

    Skip the first ``skip_first`` steps, then cycle: ``wait`` steps idle (NONE), ``warmup``
    steps run but discarded (WARMUP), ``active`` steps recorded (RECORD, the last one
    RECORD_AND_SAVE, which ends the window and delivers its Profile). ``repeat`` cycles, 0 for
    as long as the loop runs. ``skip_first_wait`` != 0 skips the first cycle's wait.
    Invalid counts raise PyfxprofError; ``warmup=0`` warns, as torch does.

    Example:
        >>> s = schedule(wait=1, warmup=1, active=2, repeat=1)
        >>> [s(step).name for step in range(5)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    counts = {"wait": wait, "warmup": warmup, "active": active, "repeat": repeat,
              "skip_first": skip_first, "skip_first_wait": skip_first_wait}
    for key, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise PyfxprofError(f"schedule {key} must be an integer, got {value!r}")
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise PyfxprofError(
            f"invalid schedule: wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0)")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return Schedule(**counts)


def record_every_step(step: int) -> ProfilerAction:
    """The schedule without one: every step is recorded, one window until the Profiler exits.

    Example:
        >>> record_every_step(7).name
        'RECORD'
    """
    return ProfilerAction.RECORD


def checked_action(action, step: int) -> ProfilerAction:
    """``action`` if it is one of ACTIONS, else a PyfxprofError naming the step.

    Example:
        >>> checked_action(ProfilerAction.WARMUP, 0).name
        'WARMUP'
    """
    if action not in ACTIONS:
        raise PyfxprofError(f"the schedule returned {action!r} for step {step}; expected one "
                            f"of {', '.join(a.name for a in ACTIONS)}")
    return action
