"""The torch.profiler-style loop API: profile a training or serving loop step by step.

    with pyfxprof.Profiler(model, schedule=pyfxprof.schedule(wait=1, warmup=1, active=3),
                           on_trace_ready=handler) as p:
        for batch in loader:
            out = p.model(batch)         # or model(batch)
            p.step()

    with pyfxprof.Profiler(model) as p:  # code you do not own calls the model
        out = model.generate(ids, max_new_tokens=16)
    print(p.summary())

While the block is open, the model's own ``forward`` is routed through the Profiler (and
restored exactly on exit), so every call of the model is profiled: by ``p.model``, by your
loop or by a library. Calls are grouped by input signature (call_groups.py), each group
captured and analysed once on copies of its first call's arguments (the per-call path:
calls.py). Per step, a call runs:
the model itself in NONE steps (no overhead), its group's instrumented capture in WARMUP
steps (records dropped at each step) and in RECORD steps (records kept). Each active window
ends in one Profile per group with calls in it, one row per call.
"""

from __future__ import annotations

import threading
import warnings
from collections import deque
from typing import Any, Callable, cast

import numpy as np
import torch

from ..timing.native import _C, logged_rows
from ..capture.inductor import is_compiled
from ..capture.inputs import split_inputs
from ..capture.ladder import check_model
from ..data.profile import Profile
from ..data.units import format_ns
from ..errors import ArgumentError, PyfxprofError, whole_number
from ..timing.nvtx import check_nvtx
from ..timing.recorder import RECORDER
from . import ranges
from .call_groups import CallGroup, args_key, primary_shape
from .generation import CallLog, format_latency, generation_latency
from .calls import CallRouting, binder_of
from .training_calls import optimizer_hooks
from ..run.metadata import model_name
from ..run.arguments import CAPTURE, TIMING, CaptureOptions, TimingOptions, option_groups
from .model_patch import ForwardPatch
from .schedule import ProfilerAction, checked_action, record_every_step
from .window import Window, collect, window_profiles

_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
#: Recorded calls whose start and end the Profiler keeps for generation_latency().
MAX_LOGGED_CALLS = 100_000


class ProfiledModel:
    """``Profiler.model``: call it like the model (inside the block it is the model's own
    call, profiled like any other).

    Example:
        >>> with Profiler(torch.nn.ReLU()) as p:
        ...     out = p.model(torch.ones(2))
        >>> out.tolist()
        [1.0, 1.0]
    """

    __slots__ = ("_profiler",)

    def __init__(self, profiler: "Profiler") -> None:
        self._profiler = profiler

    def __call__(self, *args, **kwargs):
        return self._profiler.module(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<pyfxprof profiled {type(self._profiler.module).__name__}>"


def _check_arguments(module: torch.nn.Module, backward: bool, capture: CaptureOptions,
                     schedule: Callable | None, on_trace_ready: Callable | None) -> None:
    """Profiler's arguments refused in one line: training steps or memory of a compiled
    model, a schedule or on_trace_ready that is not callable."""
    for option, value in (("backward", backward), ("profile_memory", capture.profile_memory)):
        if value and is_compiled(module):
            raise PyfxprofError(f"{option}=True is not supported for compiled models yet: "
                                f"profile the loop of model._orig_mod with {option}=True")
    for label, given in (("schedule", schedule), ("on_trace_ready", on_trace_ready)):
        if given is not None and not callable(given):
            raise PyfxprofError(f"{label} must be callable, got {type(given).__name__}")


class Profiler(CallRouting):
    """torch.profiler.profile's loop API, timing every graph node with native marks.

    Args:
        model: the torch.nn.Module to profile; never modified (its ``forward`` is routed
            through the Profiler only while the block is open), run in whatever mode the
            user runs it (training with autograd, or eval under inference_mode).
        schedule: step -> ProfilerAction (see pyfxprof.schedule); None records every step
            and delivers the Profiles when the Profiler exits.
        on_trace_ready: called with each Profile of each completed active window.
        example_inputs: capture now from these (tuple, dict of keywords or one value);
            None captures at the first call of the model.
        name: the model name in the Profiles (default: its class name).
        keep_profiles: how many of the latest Profiles ``profiles`` keeps (None: all).
        backward: also time each recorded call's backward per node and the optimizer steps
            after it (loop/training_calls.py; docs/loop.md "Training loops").
        capture_options, timing_options, options: profile()'s option groups
            (pyfxprof.CaptureOptions, pyfxprof.TimingOptions; their fields also as keywords)
            and torch.profiler's keywords, as pyfxprof.profile takes them: leaf_modules,
            autowrap_functions, concrete_args; profile_memory and library_frames, measured in
            each call group's untimed analysis run (never in timed calls); device_events
            (False: host timing only; torch.profiler's ``activities`` without CUDA says the
            same); nvtx, an NVTX range per timed call (docs/gpu.md); record_shapes,
            with_stack, with_flops, with_modules, always recorded. The loop captures each
            call where the model is, as it runs: capture, granularity, mode and device keep
            their defaults.

    Example:
        >>> from pyfxprof.loop.schedule import schedule
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        >>> with Profiler(model, schedule=schedule(wait=0, warmup=1, active=2)) as p:
        ...     for _ in range(6):
        ...         out = p.model(torch.randn(3, 4))
        ...         p.step()
        >>> [(prof.n_runs, prof.n_nodes) for prof in p.profiles]
        [(2, 2), (2, 2)]
    """

    def __init__(self, model: torch.nn.Module | Callable[..., Any], *,
                 schedule: Callable | None = None,
                 on_trace_ready: Callable[[Profile], Any] | None = None,
                 example_inputs: Any = None, name: str | None = None,
                 keep_profiles: int | None = 100, backward: bool = False,
                 capture_options: CaptureOptions | None = CAPTURE,
                 timing_options: TimingOptions | None = TIMING, **options: Any) -> None:
        check_model(model)
        # a torch.nn.Module (check_model refuses anything else); the parameter also takes
        # what torch.compile(model) returns, which torch's stubs type as a plain Callable
        module = cast(torch.nn.Module, model)
        self._capture, self._timing = loop_options(options, capture_options, timing_options)
        _check_arguments(module, backward, self._capture, schedule, on_trace_ready)
        self.module = module
        self.model = ProfiledModel(self)
        self.schedule = schedule or record_every_step
        self.on_trace_ready = on_trace_ready
        self.name = name or (f"{type(module._orig_mod).__name__} (compiled)"
                             if is_compiled(module) else model_name(module))
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._example_inputs = example_inputs
        check_nvtx(self._timing.nvtx)
        keep = whole_number("keep_profiles", keep_profiles, none=True)
        self._profiles: deque[Profile] = deque(  # more than memory holds keeps them all
            maxlen=None if keep is None or keep > 2**62 else keep)
        self._groups: dict[tuple, CallGroup] = {}
        self._direct: dict[tuple, CallGroup] = {}  # args_key -> graph group, calls bound as given
        self._armed: dict[tuple, tuple] = {}  # the hot path's: _direct's noted in the window
        self._traceable = True  # Dynamo may trace the patched forward (loaded after start())
        self._uncaptured: dict[tuple, str] = {}  # signatures no group serves, and why
        self._recent: dict[tuple, tuple] = {}  # signature -> its last call's variant
        self._window: Window | None = None
        self._patch: ForwardPatch | None = None
        self._open = False
        self._recording = False  # a recording step, with its window open
        self._busy = threading.Lock()  # held while a call of the model is handled
        self._holder: int | None = None  # the thread handling it (its nested calls pass)
        self._thread: int | None = None  # the thread whose calls are profiled in this block
        self._warmup_calls = 0
        self._untimed: dict[str, int] = {}
        self._own_ns: dict[int, list] = {}
        self._windows = 0
        self._warned: set[str] = set()
        self._log = _C.logged_calls(MAX_LOGGED_CALLS)
        self._binder = binder_of(module)
        self._hot = _C.hot_forward(self._armed, module, torch.Tensor, self._log, args_key,
                                   self._note_failed_call)
        self._backward = backward

    @property
    def profiles(self) -> list[Profile]:
        """The Profiles delivered so far (the latest ``keep_profiles``), oldest first.

        Example:
            >>> p.profiles[-1].table(top=10)  # doctest: +SKIP
        """
        return list(self._profiles)

    def __enter__(self) -> "Profiler":
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        if exc_type is None:
            self.stop()
        else:
            self._abandon()

    def start(self) -> None:
        """Start at step 0 (what ``with`` does); captures now if example_inputs were given.

        Example:
            >>> p = Profiler(torch.nn.ReLU()); p.start()
            >>> _ = p.model(torch.ones(1)); p.stop(); len(p.profiles)
            1
        """
        if self._open:
            raise PyfxprofError("this Profiler is already started")
        if self._example_inputs is not None and not self._groups:
            args, kwargs = split_inputs(self._example_inputs)
            self._bound(args, kwargs)  # a mismatch is a one-line error (the capture is
            # the first call's own: a call made here would run the model's Python once more)
        self.step_num = 0
        self._calls += 1  # no call of an earlier block directly precedes this block's first
        self._first_call = self._calls + 1
        self._thread = None
        self._patch = ForwardPatch(self.module, self._forward, front=self._hot)
        self._hot.own = self._patch.original  # what NONE steps' calls run (_sync_hot)
        self._traceable = self._patch.traceable
        self._open = True
        optimizer_hooks(self._groups.values(), True)
        try:
            self.current_action = checked_action(self.schedule(0), 0)
            self._transit(ProfilerAction.NONE, self.current_action)
        except BaseException:
            self._abandon()
            raise

    def step(self) -> None:
        """Signal that the next step starts (as torch.profiler's step()); may deliver Profiles.

        Example:
            >>> for batch in loader:  # doctest: +SKIP
            ...     p.model(batch); p.step()
        """
        if not self._open:
            raise PyfxprofError("Profiler.step() called outside its with block")
        previous = self.current_action
        action = checked_action(self.schedule(self.step_num + 1), self.step_num + 1)
        self.step_num += 1
        self.current_action = action
        self._transit(previous, action)

    def stop(self) -> None:
        """End profiling (what leaving ``with`` does); delivers the window being recorded and
        gives the model its own ``forward`` back.

        Example:
            >>> p = Profiler(torch.nn.ReLU(), example_inputs=torch.ones(1)); p.start()
            >>> _ = p.model(torch.ones(1)); _ = p.model(torch.ones(1)); p.stop()
            >>> p.profiles[0].n_runs
            2
        """
        if self._open:
            try:
                self._transit(self.current_action, None)
            finally:
                self._close()

    def generation_latency(self) -> dict:
        """Time to first token and per-token decode latency of the calls recorded so far
        (see pyfxprof/loop/generation.py): ``{"generations", "ttft_ns", "decode_ns"}``, each
        summary with count, mean, median, p90 and p99 in ns: the user's program (the graph's
        figures shifted by the model's own forward timed beside it), with the graph's alone
        as ``graph_ttft_ns`` and ``graph_decode_ns``.

        Example:
            >>> p.generation_latency()["decode_ns"]["median"]  # doctest: +SKIP
            1043210.0
        """
        log = logged_rows(self._log).T
        groups = {group.index: group for group in self._groups.values()}
        single = {index: _single_position(group) for index, group in groups.items()}
        cost = {index: group.executor.calls_per_run * group.executor.calibration.overhead_ns
                for index, group in groups.items()}
        costs = np.array([cost[g] for g in log[2]], dtype=np.float64)
        shift = _own_shift(self._own_ns, log[2], log[1] - log[0] - costs)
        return generation_latency(CallLog(
            log[0], log[1], np.array([single[g] for g in log[2]], dtype=bool), costs, log[3],
            log[4], log[5] > 0, shift))

    def summary(self) -> str:
        """The call groups (input signatures) with their recorded calls, nodes, capture
        mode and time, and FLOPs, then the generation latency when decode steps were recorded.

        Example:
            >>> with Profiler(torch.nn.ReLU()) as p:
            ...     _ = p.model(torch.ones(2))
            >>> print(p.summary())  # doctest: +ELLIPSIS
            Profiler(ReLU): 1 call signature, 1 call recorded, 1 Profile
              [0] ([2] float32): 1 call, median ... per call, 1 node (capture dynamo in ...), 0 FLOPs
        """
        totals: dict[int, list] = {group.index: [] for group in self._groups.values()}
        for prof in self._profiles:
            totals[prof.meta["loop"]["call_group"]].append(prof.run_totals)
        calls = {k: sum(len(t) for t in found) for k, found in totals.items()}
        lines = [f"Profiler({self.name}): {_count(len(self._groups), 'call signature')}, "
                 f"{_count(sum(calls.values()), 'call')} recorded, "
                 f"{_count(len(self._profiles), 'Profile')}"]
        for group in self._groups.values():
            found = totals[group.index]
            median = (f", median {format_ns(np.median(np.concatenate(found)))} per call"
                      if calls[group.index] else "")
            lines.append(f"  [{group.index}] {group.label}: {_count(calls[group.index], 'call')}"
                         f"{median}, {_count(len(group.frame), 'node')} (capture "
                         f"{group.capture.mode}{' from the cache' if group.cached else ''} in "
                         f"{format_ns(group.capture_ns)}), "
                         f"{group.flops:,} FLOPs")
        for why, count in self._untimed.items():
            lines.append(f"  {_count(count, 'call')} not timed per node: {why}")
        latency = self.generation_latency()
        if latency["decode_ns"]["count"]:
            lines.append(format_latency(latency))
        return "\n".join(lines)

    def _close(self) -> None:
        self._open = self._recording = False
        self._sync_hot()
        optimizer_hooks(self._groups.values(), False)
        self._hot.own = None
        if self._patch is not None:
            self._patch.restore()
            self._patch = None

    def _abandon(self) -> None:
        """Leave after an exception: the open window is discarded, nothing is delivered."""
        try:
            if self._window is not None:
                self._close_window(deliver=False)
            for group in self._groups.values():
                group.reset()
        finally:
            self._close()

    def _transit(self, previous: ProfilerAction, action: ProfilerAction | None) -> None:
        """torch.profiler's state transitions, applied to the record buffer and the windows."""
        if previous == ProfilerAction.WARMUP:
            self._reset_executors()  # warm-up records are dropped every step
            if action == ProfilerAction.NONE:
                warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=3)
        if self._window is not None:
            if previous == ProfilerAction.RECORD and action in (ProfilerAction.NONE,
                                                                ProfilerAction.WARMUP):
                warnings.warn(f"Incorrect schedule: RECORD followed by {action.name}; the "
                              "window is discarded", stacklevel=3)
                self._close_window(deliver=False)
            elif previous == ProfilerAction.RECORD_AND_SAVE or action is None:
                self._close_window(deliver=True)
        if action in _RECORDING:
            window = self._window if self._window is not None else self._open_window()
            window.steps.append(self.step_num)
            window.step_starts.append(_C.now_ns())
        self._recording = action in _RECORDING  # (after the window it needs is open)
        self._sync_hot()

    def _reset_executors(self) -> None:
        for group in self._groups.values():
            group.reset()

    def _open_window(self) -> Window:
        self._reset_executors()
        self._armed.clear()
        window = self._window = Window(self._warmup_calls, RECORDER.dropped_total)
        self._warmup_calls = 0
        self._untimed = {}
        self._own_ns = {}
        window.read_counters()
        ranges.start_recording()
        return window

    def _close_window(self, deliver: bool) -> None:
        """Collect the window's node and range records (the buffer keeps none of them)."""
        window, self._window, self._recording = self._window, None, False
        assert window is not None, "no window to close"
        self._armed.clear()
        self._sync_hot()
        window.read_counters()
        ranges.stop_recording()
        collected = collect(list(self._groups.values()))
        records = ranges.collect()
        for found in collected:  # incomplete runs but those of calls that raised
            missed = found.timings.incomplete_runs - window.failed.get(found.group.index, 0)
            if missed > 0:
                self._not_timed("a graph of the call did not run (Dynamo's guards sent part of "
                                "it to the model's own Python)", missed, window)
        if not deliver:
            return
        schedule_name = getattr(self.schedule, "__name__", None) or repr(self.schedule)
        context = {"model": self.name, "module": self.module, "window": self._windows,
                   "schedule": schedule_name, "step_num": self.step_num}
        profiles = window_profiles(window, collected, records, context)
        if profiles:
            self._windows += 1
        for profile in profiles:
            self._profiles.append(profile)
            if self.on_trace_ready is not None:
                self.on_trace_ready(profile)


#: The option fields the loop leaves at their defaults: it captures each call as it runs
#: (the ladder of docs/loop.md), one node per function, with native marks, where the model is.
_PROFILE_ONLY = ("capture", "granularity", "mode", "device")


def loop_options(options: dict, capture_options: CaptureOptions | None,
                 timing_options: TimingOptions | None) -> tuple[CaptureOptions, TimingOptions]:
    """The Profiler's option groups (run/arguments.py option_groups, as profile() takes
    them), or one line for a field the loop has no choice of (_PROFILE_ONLY).

    Example:
        >>> loop_options({"capture": "fx"}, None, None)
        Traceback (most recent call last):
        ...
        pyfxprof.errors.ArgumentError: pyfxprof.Profiler captures each call as it runs, where the model is: leave capture at its default 'auto' (docs/loop.md)
    """
    capture, timing = option_groups(options, capture_options, timing_options,
                                    taker="pyfxprof.Profiler", stacklevel=4)
    for name in _PROFILE_ONLY:
        group, default = (capture, CAPTURE) if hasattr(CAPTURE, name) else (timing, TIMING)
        if getattr(group, name) != getattr(default, name):
            raise ArgumentError(f"pyfxprof.Profiler captures each call as it runs, where the "
                                f"model is: leave {name} at its default "
                                f"{getattr(default, name)!r} (docs/loop.md)")
    if timing.alone != TIMING.alone:
        raise ArgumentError("pyfxprof.Profiler times the calls your program makes and no node "
                            "alone: leave alone out and call replay(node) on a recorded "
                            "Profile (docs/replay.md)")
    return capture, timing


def _own_shift(own_ns: dict[int, list], groups: np.ndarray, graph_ns: np.ndarray
               ) -> np.ndarray:
    """Per logged call, its group's own forward (timed beside, median) minus its graph runs
    (median); 0 for a group whose own forward was not timed."""
    shift = np.zeros(len(groups))
    for index, found in own_ns.items():
        calls = groups == index
        if found and calls.any():
            shift[calls] = float(np.median(found)) - float(np.median(graph_ns[calls]))
    return shift


def _single_position(group: CallGroup) -> bool:
    """Whether the group's first tensor argument holds one position along its last
    dimension (one new token per sequence: a decode step)."""
    shape = primary_shape(group.key)
    return bool(shape and shape[-1] == 1)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
