"""An active window of the Profiler and the Profiles it ends in: one per call group (input
signature) with calls recorded in the window, each with the shapes and FLOPs of its group.

The machine's noise (context switches, CPU and wall time of the profiling thread) is read
once when the window opens and once when it closes, never per call: a read is two system
calls, 1.5-6 µs, more than the rest of the loop's own work per call (benchmarks/README.md),
so the Profiles carry the window's noise in ``meta["loop"]["noise"]`` and no per-call
``run_noise``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ..capture.shape_run import describe
from ..capture.inputs import BoundInputs
from ..capture.model_state import autograd_mode, numeric_mode
from ..data.rungs import INDUCTOR
from ..data.profile import Profile
from ..data.run_noise import NOISE_COLUMNS
from ..timing.durations import RunTimings
from ..timing.recorder import RECORDER, Records
from . import ranges
from .call_groups import CallGroup
from ..run.compiled_profile import with_outside
from .training_calls import LoopBackwardExecutor, loop_frame, with_loop_backward
from ..run.metadata import run_meta
from ..run.noise import RunMeter
from ..run.run_counters import core_wait_ns
from ..run.runner import build_profile


@dataclass
class Window:
    """An active window in progress: its steps, their start times, and per call group what
    its first call in the window saw (grad, training, input shapes)."""

    warmup_calls: int
    dropped_before: int
    steps: list[int] = field(default_factory=list)
    step_starts: list[int] = field(default_factory=list)
    first_calls: dict[int, dict] = field(default_factory=dict)
    untimed: dict[str, int] = field(default_factory=dict)  # calls not timed per node, by why
    failed: dict[int, int] = field(default_factory=dict)  # per group: calls that raised
    own_ns: dict[int, int] = field(default_factory=dict)  # per group: own forward timed beside
    own_left: dict[int, int] = field(default_factory=dict)  # per group: own forwards to time
    own_times: dict[int, list] = field(default_factory=dict)  # per group: their times (ns)
    meter: RunMeter = field(default_factory=RunMeter)  # read at open and at close
    core_waits: list = field(default_factory=list)  # core_wait_ns at open and at close

    def read_counters(self) -> None:
        """Read the noise meter and the threads' core wait (at the window's open and close)."""
        self.meter.read()
        self.core_waits.append(core_wait_ns())

    def core_wait_share(self) -> float | None:
        """How long the process's threads waited for a core over the window (summed over the
        threads; run.run_counters.core_wait_ns) as a share of the window's wall time; None
        where either read failed or the window is not closed.

        Example:
            >>> window = Window(0, 0)
            >>> window.core_waits = [100, 600]
            >>> window.meter._reads = [(0, 0, 0, 0), (1000, 0, 0, 0)]
            >>> window.core_wait_share()
            0.5
        """
        paired = self.meter.paired()
        if len(self.core_waits) != 2 or None in self.core_waits or paired is None or \
                paired[0][3] <= 0:
            return None
        return max(self.core_waits[1] - self.core_waits[0], 0) / float(paired[0][3])

    def note_call(self, group: CallGroup, module: torch.nn.Module, args: tuple,
                  kwargs: dict) -> None:
        """Remember the group's first call in the window (later calls cost a dict lookup)."""
        if group.index not in self.first_calls:
            shapes = describe(args) if not kwargs else describe({**dict(enumerate(args)),
                                                                 **kwargs})
            self.first_calls[group.index] = {"grad": torch.is_grad_enabled(),
                                             "autograd": autograd_mode(),
                                             "training": module.training,
                                             "input_shapes": shapes, "numeric": numeric_mode(
                                                 module, BoundInputs(args, kwargs))}


@dataclass
class Collected:
    """What one call group recorded in a window."""

    group: CallGroup
    timings: RunTimings
    device_samples: np.ndarray | None
    noted: list = field(default_factory=list)  # each run's size symbols' values (CallGroup)


def collect(groups: list[CallGroup]) -> list[Collected]:
    """Every group's records of the window; the record buffer keeps none of them."""
    found = []
    for group in groups:
        timings = group.executor.timings()
        found.append(Collected(group, timings, group.executor.device_samples(),
                               list(group.noted)))
        group.reset()
    return found


def sizes_seen(symbols: tuple[str, ...], noted: list, runs: int,
               incomplete: int = 0) -> dict[str, Any] | None:
    """``meta["loop"]["sizes"]`` of a group with dynamic dimensions: its size symbols, the
    distinct values its runs noted (ascending), and per run (a row of samples) the index of
    its values, or None where the runs cannot be matched to the notes (a run lost records).
    None for a group without size symbols or notes.

    Example:
        >>> sizes_seen(("s0",), [8, 9, 9, 8], 4)
        {'symbols': ['s0'], 'seen': [[8], [9]], 'runs': [0, 1, 1, 0]}
    """
    if not symbols or not noted:
        return None
    values = np.asarray(noted, np.int64).reshape(len(noted), len(symbols))
    seen, index = np.unique(values, axis=0, return_inverse=True)
    matched = len(noted) == runs and not incomplete
    return {"symbols": list(symbols), "seen": seen.tolist(),
            "runs": index.reshape(-1).tolist() if matched else None}


def window_profiles(window: Window, collected: list[Collected], records: Records,
                    context: dict) -> list[Profile]:
    """One Profile per group with complete calls in the window, in the groups' order.

    `context` holds the Profiler's part of the metadata: model, module, window (number),
    schedule (name) and step_num (the Profiler's, as on_trace_ready sees it). User ranges are rows of every Profile; a step's ranges are carried
    by the step's first call over all groups (so they are counted once).
    """
    used = [c for c in collected if c.timings.intervals.shape[0] > 0]
    steps = f"{window.steps[0]}..{window.steps[-1]}"
    if not used:
        warnings.warn(f"steps {steps} recorded no complete call of the model; no Profile "
                      "delivered", stacklevel=5)
        return []
    window_starts = np.concatenate([c.timings.run_starts for c in used])
    step_starts = np.asarray(window.step_starts, np.int64)
    profiles = []
    paired = window.meter.paired()
    noise = None if paired is None else dict(zip(NOISE_COLUMNS, paired[0].tolist()))
    share = window.core_wait_share()
    for found in used:
        meta = _meta(window, found, context)
        meta["loop"]["noise"] = noise
        sizes = sizes_seen(found.group.sizes, found.noted, found.timings.intervals.shape[0],
                           found.timings.incomplete_runs)
        if sizes is not None:
            meta["loop"]["sizes"] = sizes
        executor = found.group.executor
        training = isinstance(executor, LoopBackwardExecutor)
        frame = loop_frame(found.group.frame, context["module"]) if training else found.group.frame
        if found.group.capture.mode == INDUCTOR:  # one row per kernel, plus the outside row
            profile = with_outside(frame, found.timings, meta, None)
        else:
            profile = build_profile(frame, found.timings, meta, found.device_samples)
        if isinstance(executor, LoopBackwardExecutor):  # (training)
            profile = with_loop_backward(profile, executor, window.steps, window.step_starts)
        elif found.group.backward_note:
            profile.meta["backward_note"] = found.group.backward_note
        if share is not None and profile.n_runs:  # the window's wait spread over its time
            profile.meta["core_wait_ns_per_run"] = share * float(np.median(profile.run_totals))
        profiles.append(ranges.with_ranges(profile, records, step_starts, window_starts))
    return profiles


def _meta(window: Window, found: Collected, context: dict) -> dict[str, Any]:
    group, first = found.group, window.first_calls.get(found.group.index, {})
    return run_meta(
        context["module"], context["model"], device=group.device,
        device_events=group.executor.device is not None, executor=group.executor,
        captured=group.capture, timings=found.timings, warmup=window.warmup_calls,
        mode=group.executor.mode, grad=first.get("grad"),
        input_shapes=first.get("input_shapes", ""),
        dropped_records=RECORDER.dropped_total - window.dropped_before,
        training=first.get("training"), given_training=first.get("training"),
        autograd=first.get("autograd"), flops=group.flops, **first.get("numeric", {}),
        loop={"window": context["window"], "steps": [window.steps[0], window.steps[-1]],
              "schedule": context["schedule"], "call_group": group.index,
              "signature": group.label, "step_num": context["step_num"],
              "step_starts_ns": [int(start) for start in window.step_starts],
              "untimed_calls": dict(window.untimed),
              "own_call_ns": window.own_ns.get(group.index)})
