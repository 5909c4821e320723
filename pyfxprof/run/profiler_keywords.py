"""torch.profiler's keyword arguments, accepted by profile() and the Profiler loop with their
meaning: pyfxprof always records input shapes, source lines, FLOPs and module paths, so
``record_shapes``, ``with_stack``, ``with_flops`` and ``with_modules`` change nothing (said once
per process), ``activities`` selects host-only or host and device (CUDA event) timing, and
``profile_memory`` is pyfxprof's own option of the same meaning (per-node allocator bytes)."""

from __future__ import annotations

import warnings
from typing import Any, Iterable

from ..errors import PyfxprofError

#: torch.profiler keyword -> what pyfxprof always records in its place.
RECORDED_ALWAYS = {"record_shapes": "input shapes", "with_stack": "source lines",
                   "with_flops": "FLOPs", "with_modules": "module paths"}

_said: list[bool] = []  # the note was given in this process
#: Why profile() refuses the loop's keywords (schedule, on_trace_ready, ...).
_LOOP_ONLY = ("pyfxprof.profile(model, inputs) times a model and returns a Profile "
              "(unexpected arguments {}); for `with ... as p:` loops like torch.profiler use "
              "`with pyfxprof.Profiler(model, schedule=...) as p:`")
#: Why the Profiler refuses the other torch.profiler keywords.
_NOT_TAKEN = ("pyfxprof.Profiler takes torch.profiler's schedule, on_trace_ready, "
              "record_shapes, with_stack, with_flops, with_modules, profile_memory and "
              "activities; it has no {}")


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


def torch_profiler_keywords(options: dict, device_events: bool | None,
                            loop: bool = False) -> bool | None:
    """`device_events` as torch.profiler's `activities` in `options` sets it (CUDA: on, CPU
    only: off; None when not given), after checking the other keywords of RECORDED_ALWAYS;
    any other keyword is refused in one line: for profile() (``schedule``, ``on_trace_ready``...)
    it belongs to the Profiler loop; for the loop (`loop`) it has no meaning in pyfxprof.

    Example:
        >>> import torch
        >>> torch_profiler_keywords({"activities": [torch.profiler.ProfilerActivity.CPU]}, None)
        False
    """
    others = sorted(set(options) - set(RECORDED_ALWAYS) - {"activities"})
    if others:
        raise PyfxprofError((_NOT_TAKEN if loop else _LOOP_ONLY).format(others))
    given = [key for key in RECORDED_ALWAYS if key in options]
    for key in given:
        if not isinstance(options[key], bool):
            raise PyfxprofError(f"{key} must be True or False, got {options[key]!r}")
    if given and not _said:
        _said.append(True)
        warnings.warn(f"pyfxprof always records {', '.join(RECORDED_ALWAYS.values())}: "
                      f"{', '.join(given)} change nothing", stacklevel=3 if loop else 4)
    if "activities" not in options:
        return device_events
    cuda = "cuda" in _activity_names(options["activities"])
    if device_events is not None and device_events != cuda:
        raise PyfxprofError(f"activities {'asks' if cuda else 'does not ask'} for CUDA but "
                            f"device_events={device_events}: give one of them")
    return cuda
