"""torch.profiler's keyword arguments, accepted by profile() and the Profiler loop with their
meaning: pyfxprof always records input shapes, source lines, FLOPs and module paths, so
``record_shapes``, ``with_stack``, ``with_flops`` and ``with_modules`` change nothing (said once
per process), ``activities`` selects host-only or host and device (CUDA event) timing, and
``profile_memory`` is pyfxprof's own option of the same meaning (per-node allocator bytes)."""

from __future__ import annotations

import warnings
from typing import Any, Iterable

from ..errors import ArgumentError, PyfxprofError

#: torch.profiler keyword -> what pyfxprof always records in its place.
RECORDED_ALWAYS = {"record_shapes": "input shapes", "with_stack": "source lines",
                   "with_flops": "FLOPs", "with_modules": "module paths"}

#: torch.profiler's keywords that profile(), compare() and the Profiler take beside their option
#: groups' fields (``profile_memory`` is CaptureOptions' own, run/arguments.py).
KEYWORDS = (*RECORDED_ALWAYS, "activities")
#: torch.profiler's keywords of its loop, which only the Profiler takes.
LOOP_KEYWORDS = ("schedule", "on_trace_ready")

_said: list[bool] = []  # the note was given in this process
#: Why profile() refuses the loop's keywords (schedule, on_trace_ready).
_LOOP_ONLY = ("pyfxprof.profile(model, inputs) times a model and returns a Profile "
              "(unexpected arguments {}); for `with ... as p:` loops like torch.profiler use "
              "`with pyfxprof.Profiler(model, schedule=...) as p:`")


def unknown_keywords(taker: str, unknown: list[str], options: Iterable[str]) -> PyfxprofError:
    """The one-line error for keywords `taker` (a name as users write it) does not take:
    torch.profiler's loop keywords given to profile() point to the Profiler; any other names
    the `options` it takes and torch.profiler's KEYWORDS.

    Example:
        >>> print(unknown_keywords("pyfxprof.profile()", ["runz"], ["mode"]))
        pyfxprof.profile() takes the options mode (or capture_options=, timing_options=) and torch.profiler's record_shapes, with_stack, with_flops, with_modules, activities; it has no ['runz']
    """
    if taker.startswith("pyfxprof.profile") and set(unknown) & set(LOOP_KEYWORDS):
        return ArgumentError(_LOOP_ONLY.format(unknown))
    return ArgumentError(f"{taker} takes the options {', '.join(options)} (or "
                         f"capture_options=, timing_options=) and torch.profiler's "
                         f"{', '.join(KEYWORDS)}; it has no {unknown}")


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
                            stacklevel: int = 2) -> bool | None:
    """`device_events` as torch.profiler's `activities` in `options` (a dict of KEYWORDS)
    sets it (CUDA: on, CPU only: off; None when not given), after checking the keywords of
    RECORDED_ALWAYS, which change nothing (said once per process, the warning pointing
    `stacklevel` frames up: the user's call).

    Example:
        >>> import torch
        >>> torch_profiler_keywords({"activities": [torch.profiler.ProfilerActivity.CPU]}, None)
        False
    """
    given = [key for key in RECORDED_ALWAYS if key in options]
    for key in given:
        if not isinstance(options[key], bool):
            raise ArgumentError(f"{key} must be True or False, got {options[key]!r}")
    if given and not _said:
        _said.append(True)
        warnings.warn(f"pyfxprof always records {', '.join(RECORDED_ALWAYS.values())}: "
                      f"{', '.join(given)} change nothing", stacklevel=stacklevel)
    if "activities" not in options:
        return device_events
    cuda = "cuda" in _activity_names(options["activities"])
    if device_events is not None and device_events != cuda:
        raise PyfxprofError(f"activities {'asks' if cuda else 'does not ask'} for CUDA but "
                            f"device_events={device_events}: give one of them")
    return cuda
