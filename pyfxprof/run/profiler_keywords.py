"""torch.profiler's keyword arguments, accepted by profile() with their meaning: pyfxprof always
records input shapes, source lines, FLOPs and module paths, so ``record_shapes``,
``with_stack``, ``with_flops`` and ``with_modules`` change nothing (said once per process), and
``activities`` selects host-only or host and device (CUDA event) timing."""

from __future__ import annotations

import warnings
from typing import Any, Iterable

from ..errors import PyfxprofError

#: torch.profiler keyword -> what pyfxprof always records in its place.
RECORDED_ALWAYS = {"record_shapes": "input shapes", "with_stack": "source lines",
                   "with_flops": "FLOPs", "with_modules": "module paths"}

_said: list[bool] = []  # the note was given in this process


def _activity_names(activities: Any) -> set[str]:
    """{"cpu", "cuda", ...} of torch.profiler.ProfilerActivity members or their names."""
    if isinstance(activities, (str, bytes)) or not isinstance(activities, Iterable):
        raise PyfxprofError(f"activities must be a list of torch.profiler.ProfilerActivity "
                            f"(CPU, CUDA), got {activities!r}")
    names = {str(getattr(a, "name", a)).lower() for a in activities}
    unknown = names - {"cpu", "cuda"}
    if unknown:
        raise PyfxprofError(f"activities: pyfxprof times the host (CPU) and, with CUDA, the "
                            f"device; it has no {sorted(unknown)} activity")
    return names


def torch_profiler_keywords(options: dict, device_events: bool | None) -> bool | None:
    """`device_events` as torch.profiler's `activities` in `options` sets it (CUDA: on, CPU
    only: off; None when not given), after checking the other keywords of RECORDED_ALWAYS;
    any other keyword (``schedule``, ``on_trace_ready``...) belongs to the Profiler loop and is
    refused in one line.

    Example:
        >>> import torch
        >>> torch_profiler_keywords({"activities": [torch.profiler.ProfilerActivity.CPU]}, None)
        False
    """
    loop_only = sorted(set(options) - set(RECORDED_ALWAYS) - {"activities"})
    if loop_only:
        raise PyfxprofError(f"pyfxprof.profile(model, inputs) times a model and returns a "
                            f"Profile (unexpected arguments {loop_only}); for `with ... as p:` "
                            "loops like torch.profiler use `with pyfxprof.Profiler(model, "
                            "schedule=...) as p:`")
    given = [key for key in RECORDED_ALWAYS if key in options]
    for key in given:
        if not isinstance(options[key], bool):
            raise PyfxprofError(f"{key} must be True or False, got {options[key]!r}")
    if given and not _said:
        _said.append(True)
        warnings.warn(f"pyfxprof always records {', '.join(RECORDED_ALWAYS.values())}: "
                      f"{', '.join(given)} change nothing", stacklevel=4)
    if "activities" not in options:
        return device_events
    cuda = "cuda" in _activity_names(options["activities"])
    if device_events is not None and device_events != cuda:
        raise PyfxprofError(f"activities {'asks' if cuda else 'does not ask'} for CUDA but "
                            f"device_events={device_events}: give one of them")
    return cuda
