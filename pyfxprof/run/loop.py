"""The torch.profiler-style loop API: profile a training or serving loop step by step.

    with pyfxprof.Profiler(model, schedule=pyfxprof.schedule(wait=1, warmup=1, active=3),
                           on_trace_ready=handler) as p:
        for batch in loader:
            out = p.model(batch)
            p.step()

``p.model`` runs, per step: the user's own model in NONE steps (no overhead), the captured
graph with native marks in WARMUP steps (records discarded at each step, so the first
recorded step starts warm) and in RECORD steps (records kept). Each active window ends in a
Profile with one row per model call (and one column per node and user range).
"""

from __future__ import annotations

import inspect
import warnings
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd
import torch

from .. import _C
from . import ranges
from ..capture.analysis import describe
from ..capture.tracing import Capture
from ..errors import PyfxprofError
from ..timing.device_events import ensure_cuda_runtime
from ..timing.executors import CodegenExecutor
from ..timing.hooks import HooksExecutor
from .metadata import run_meta
from ..capture.model_state import evaluation_mode
from ..data.profile import Profile
from ..timing.recorder import RECORDER, Records
from .runner import build_profile, device_of, executor_for, prepare, warn_fallback
from .schedule import ProfilerAction, checked_action, record_every_step
from ..timing.durations import RunTimings

_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


@dataclass
class _Graph:
    """The captured model, its executor (the instrumented FX graph, or module hooks when FX
    cannot trace it) and its nodes table (shapes from the analysis run)."""

    capture: Capture
    frame: pd.DataFrame
    executor: CodegenExecutor | HooksExecutor
    signature: inspect.Signature
    training: bool
    device: str

    @property
    def hooks(self) -> bool:
        """True when the model runs itself with marking hooks (hooks or whole capture)."""
        return isinstance(self.executor, HooksExecutor)

    def positional(self, args: tuple, kwargs: dict) -> tuple:
        """The call's arguments in the order of the graph's placeholders."""
        return _bind(self.signature, args, kwargs)

    def run(self, positional: tuple) -> Any:
        """One timed call; module hooks, if any, exist only during it."""
        if self.hooks:
            with self.executor:
                return self.executor.run(positional)
        return self.executor.run(positional)


def _bind(signature: inspect.Signature, args: tuple, kwargs: dict) -> tuple:
    if not kwargs:
        return args
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise PyfxprofError(f"arguments do not match forward{signature}: {error}") from None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


@dataclass
class _Window:
    """An active window in progress: its steps, their start times, what its first call saw."""

    warmup_calls: int
    dropped_before: int
    steps: list[int] = field(default_factory=list)
    step_starts: list[int] = field(default_factory=list)
    first_call: dict | None = None


def _split_inputs(example_inputs: Any) -> tuple[tuple, dict]:
    """example_inputs (tuple/list of positional arguments, dict of keywords, or one value)."""
    if isinstance(example_inputs, dict):
        return (), dict(example_inputs)
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs), {}
    return (example_inputs,), {}


def capture_graph(model: torch.nn.Module, args: tuple, kwargs: dict,
                  tracer_options: tuple = ((), (), None)) -> _Graph:
    """Capture ``model`` in the mode it is in as ``pyfxprof.profile(capture="auto")`` does
    (FX, a failing submodule made a leaf, then module hooks or the whole model), run the
    untimed analysis on these inputs in eval mode without grad (flags restored, so the
    model's state is untouched), and build the executor. `tracer_options` is (leaf_modules,
    autowrap_functions, concrete_args).

    Example:
        >>> g = capture_graph(torch.nn.Linear(2, 2), (torch.zeros(1, 2),), {})
        >>> g.frame["output_shapes"].tolist()[-1], g.hooks
        ('[1, 2] float32', False)
    """
    example = _bind(inspect.signature(model.forward), args, kwargs) if kwargs else args
    with evaluation_mode(model), torch.inference_mode():
        prepared = prepare(model, example, "auto", tracer_options)
    warn_fallback(prepared.captured, "auto")
    device = device_of(model, prepared.args)
    on_cuda = device.startswith("cuda")
    if on_cuda and prepared.analysis is None:
        ensure_cuda_runtime()
    executor = executor_for(model, prepared, "codegen", on_cuda)
    gm = prepared.captured.graph_module
    signature = inspect.signature((model if gm is None else gm).forward)
    return _Graph(prepared.captured, prepared.frame, executor, signature, model.training, device)


class ProfiledModel:
    """``Profiler.model``: call it like the model; the Profiler decides what runs and is timed.

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
        return self._profiler._call(args, kwargs)

    def __repr__(self) -> str:
        return f"<pyfxprof profiled {type(self._profiler.module).__name__}>"


class Profiler:
    """torch.profiler.profile's loop API, timing every graph node with native marks.

    Args:
        model: the torch.nn.Module to profile; never modified, run in whatever mode the
            user runs it (training with autograd, or eval under inference_mode).
        schedule: step -> ProfilerAction (see pyfxprof.schedule); None records every step
            and delivers one Profile when the Profiler exits.
        on_trace_ready: called with the Profile of each completed active window.
        example_inputs: capture now from these (tuple, dict of keywords or one value);
            None captures on the first ``p.model`` call.
        leaf_modules, autowrap_functions, concrete_args: as for pyfxprof.profile.
        name: the model name in the Profiles (default: its class name).
        keep_profiles: how many of the latest Profiles ``profiles`` keeps (None: all).

    Example:
        >>> from pyfxprof.run.schedule import schedule
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        >>> with Profiler(model, schedule=schedule(wait=0, warmup=1, active=2)) as p:
        ...     for _ in range(6):
        ...         out = p.model(torch.randn(3, 4))
        ...         p.step()
        >>> [(prof.n_runs, prof.n_nodes) for prof in p.profiles]
        [(2, 2), (2, 2)]
    """

    def __init__(self, model: torch.nn.Module, *, schedule: Callable | None = None,
                 on_trace_ready: Callable[[Profile], Any] | None = None,
                 example_inputs: Any = None, leaf_modules: Iterable = (),
                 autowrap_functions: Iterable = (), concrete_args: dict | None = None,
                 name: str | None = None, keep_profiles: int | None = 100) -> None:
        if not isinstance(model, torch.nn.Module):
            raise PyfxprofError(
                f"expected a torch.nn.Module to profile, got {type(model).__name__}")
        for label, value in (("schedule", schedule), ("on_trace_ready", on_trace_ready)):
            if value is not None and not callable(value):
                raise PyfxprofError(f"{label} must be callable, got {type(value).__name__}")
        self.module = model
        self.model = ProfiledModel(self)
        self.schedule = schedule or record_every_step
        self.on_trace_ready = on_trace_ready
        self.name = name or type(model).__name__
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._example_inputs = example_inputs
        self._tracer_options = (leaf_modules, autowrap_functions, concrete_args)
        self._profiles: deque[Profile] = deque(maxlen=keep_profiles)
        self._graph: _Graph | None = None
        self._window: _Window | None = None
        self._open = False
        self._warmup_calls = 0
        self._windows = 0
        self._mode_warned = False

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
        if self._example_inputs is not None and self._graph is None:
            self._graph = capture_graph(self.module, *_split_inputs(self._example_inputs),
                                        self._tracer_options)
        self.step_num = 0
        self._open = True
        self.current_action = checked_action(self.schedule(0), 0)
        self._transit(ProfilerAction.NONE, self.current_action)

    def step(self) -> None:
        """Signal that the next step starts (as torch.profiler's step()); may deliver a Profile.

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
        """End profiling (what leaving ``with`` does); delivers the window being recorded.

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
                self._open = False

    def _abandon(self) -> None:
        """Leave after an exception: the open window is discarded, nothing is delivered."""
        if self._window is not None:
            self._close_window(deliver=False)
        if self._graph is not None:
            self._graph.executor.reset()
        self._open = False

    def _transit(self, previous: ProfilerAction, action: ProfilerAction | None) -> None:
        """torch.profiler's state transitions, applied to the record buffer and the windows."""
        if previous == ProfilerAction.WARMUP:
            if self._graph is not None:
                self._graph.executor.reset()  # warm-up records are dropped every step
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
            if self._window is None:
                self._open_window()
            self._window.steps.append(self.step_num)
            self._window.step_starts.append(_C.now_ns())

    def _open_window(self) -> None:
        if self._graph is not None:
            self._graph.executor.reset()
        self._window = _Window(self._warmup_calls, RECORDER.dropped_total)
        self._warmup_calls = 0
        ranges.start_recording()

    def _close_window(self, deliver: bool) -> None:
        """Collect the window's node and range records (the buffer keeps none of them)."""
        window, self._window = self._window, None
        ranges.stop_recording()
        timings = device_samples = None
        if self._graph is not None:
            timings = self._graph.executor.timings()
            device_samples = self._graph.executor.device_samples()
            self._graph.executor.reset()
        range_records = ranges.collect()
        if deliver:
            self._deliver(window, timings, range_records, device_samples)

    def _deliver(self, window: _Window, timings: RunTimings | None, records: Records,
                 device_samples: np.ndarray | None = None) -> None:
        steps = f"{window.steps[0]}..{window.steps[-1]}"
        if timings is None or timings.intervals.shape[0] == 0:
            warnings.warn(f"steps {steps} recorded no complete call of p.model; no Profile "
                          "delivered", stacklevel=4)
            return
        meta = self._window_meta(window, timings)
        graph = self._graph
        profile = build_profile(graph.frame, timings, graph.executor.marks_per_run, meta,
                                device_samples)
        profile = ranges.with_ranges(profile, records, np.asarray(window.step_starts, np.int64))
        self._windows += 1
        self._profiles.append(profile)
        if self.on_trace_ready is not None:
            self.on_trace_ready(profile)

    def _window_meta(self, window: _Window, timings: RunTimings) -> dict:
        graph, first = self._graph, window.first_call or {}
        schedule_name = getattr(self.schedule, "__name__", None) or repr(self.schedule)
        return run_meta(
            self.module, self.name, device=graph.device,
            device_events=graph.executor.device is not None, executor=graph.executor,
            captured=graph.capture, timings=timings, warmup=window.warmup_calls,
            mode="hooks" if graph.hooks else "codegen", grad=first.get("grad"),
            input_shapes=first.get("input_shapes", ""),
            dropped_records=RECORDER.dropped_total - window.dropped_before,
            training=first.get("training"),
            loop={"window": self._windows, "steps": [window.steps[0], window.steps[-1]],
                  "schedule": schedule_name})

    def _call(self, args: tuple, kwargs: dict) -> Any:
        """One ``p.model`` call: the model itself, or the instrumented graph when warming up or
        recording."""
        action = self.current_action
        if not self._open:
            return self.module(*args, **kwargs)
        if self._graph is None:
            self._graph = capture_graph(self.module, args, kwargs, self._tracer_options)
        if action == ProfilerAction.NONE:
            return self.module(*args, **kwargs)
        graph = self._graph
        positional = graph.positional(args, kwargs)
        if self.module.training != graph.training and not graph.hooks and not self._mode_warned:
            self._mode_warned = True
            warnings.warn("the model's training flag changed since it was captured; leaf modules "
                          "follow it, but code branching on self.training elsewhere keeps the "
                          "captured mode", stacklevel=3)
        if action == ProfilerAction.WARMUP:
            self._warmup_calls += 1
        elif self._window.first_call is None:
            self._window.first_call = {"grad": torch.is_grad_enabled(),
                                       "training": self.module.training,
                                       "input_shapes": describe(positional)}
        return graph.run(positional)

