"""`pyfxprof.profile`: one call's steps in order: arguments checked and placed
(run/arguments.py), capture (run/capture_cache.py), instrument (timing/executors.py), timed
runs with the user's own call between them (run/timed_runs.py), metadata (run/metadata.py)
and the Profile (build_profile here), whose model is remembered by weak reference (live_model)."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd
import torch

from ..capture.dynamo import GRANULARITIES
from ..capture.exported import is_exported  # noqa: F401  (read by the CLI through run)
from ..capture.inductor import compile_settings, is_aoti_model
from ..capture.model_state import evaluation_mode, grad_context, keeping_rng_state
from ..capture.tracing import fx_sources_released
from ..data.device_summary import add_device_summary
from ..data.rungs import CAPTURE_MODES
from ..data.op_names import range_names
from ..data.profile import Profile
from ..data.validate import run_coverage
from ..errors import PyfxprofError
from ..timing.durations import RunTimings
from ..timing.executors import MODES, ready_executor
from .aoti import profile_aoti
from .arguments import (CAPTURE, TIMING, Arguments, CaptureOptions, TimingOptions, checked,
                        option_groups, placed)
from .capture_cache import captured
from .live_models import _LIVE, live_model  # noqa: F401  (live_model: read through here)
from .metadata import modes_meta, profile_meta
from .timed_runs import Measured, measured
from .user_call import with_user_call
from .wall_clock import StepClock

if TYPE_CHECKING:
    from torch.export import ExportedProgram

#: The choices of profile()'s capture=, granularity= and mode=, defined in capture and timing
#: and read from here by the CLI (which imports the run stage only).
CHOICES = {"capture": CAPTURE_MODES, "granularity": GRANULARITIES, "mode": MODES}


@fx_sources_released()
@keeping_rng_state
def profile(model: torch.nn.Module | Callable[..., Any] | ExportedProgram | None = None,
            example_inputs: Any = (), runs: int = 50, warmup: int | str = "auto", *,
            grad: bool = False, name: str | None = None, progress: bool = True,
            compile: bool | dict | None = None, backward: bool = False,
            loss_fn: Callable | None = None,
            capture_options: CaptureOptions | None = CAPTURE,
            timing_options: TimingOptions | None = TIMING, **options: Any) -> Profile:
    """Time every node of `model` on `example_inputs` and return a Profile.

    Runs the model in eval mode under torch.inference_mode() (``grad=True``: autograd), never
    modified (meta: modes_meta); shapes from one untimed run; mark cost subtracted (meta).

    Args:
        example_inputs: a tuple of positional arguments, a dict of keyword arguments, a
            pyfxprof.BoundInputs (both), or one tensor; copied, never run on themselves.
        runs, warmup: timed runs kept, and untimed runs before them: a count, or "auto" (until
            settled, at most 10: docs/profile.md, "Warm-up"). compile: docs/compiled.md.
        backward, loss_fn: training steps (docs/profile.md).
        capture_options, timing_options: a pyfxprof.CaptureOptions (capture, granularity,
            leaf_modules, autowrap_functions, concrete_args, library_frames, profile_memory)
            and a pyfxprof.TimingOptions (mode, device, device_events, nvtx): their fields'
            meanings in help() of each and docs/profile.md's table.
        options: the groups' fields as keywords (``mode="interpreter"``), and torch.profiler's
            (record_shapes, with_stack, with_flops, with_modules, profile_memory, activities).

    Example:
        >>> prof = profile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()),
        ...                (torch.randn(4, 8),), runs=5, warmup=1, mode="interpreter")
        >>> prof.n_nodes, prof.n_runs, prof.meta["mode"]
        (2, 5, 'interpreter')
    """
    capture, timing = option_groups(options, capture_options, timing_options, stacklevel=5)
    given = checked(Arguments(model, example_inputs, runs, warmup, grad, name, progress,
                              compile, backward, loss_fn, capture, timing))
    if given.compiled:
        return remember_model(_profile_compiled(given), given.model)
    own, given = placed(given)
    given_training, clock = own.training, StepClock()
    with evaluation_mode(given.model, not backward), grad_context(grad or backward):
        prepared, executor, keep = captured(given, own, clock)
        executor, drops_before = ready_executor(
            executor, keep, given.model, prepared, given.timing.mode,
            bool(given.timing.device_events), clock=clock,
            range_names=range_names(prepared.frame) if given.timing.nvtx else None)
        runs_measured = measured(executor, drops_before, prepared, given, clock)
        modes = modes_meta(given.model, given_training, given.example_inputs)
    meta = profile_meta(given, prepared, runs_measured, modes, clock)
    built = _built(prepared.frame, runs_measured, meta, given.model if backward else None)
    return remember_model(built, given.model)


def _built(frame: pd.DataFrame, measured: Measured, meta: dict,
           trained: torch.nn.Module | None) -> Profile:
    """build_profile of the runs `measured`, and of a training run (`trained`: the model) its
    backward too (run/training.py), stated against the user's call (with_user_call; its row
    goes into the column the run table reserved: RunTimings.spare); the nodes' alone columns
    and meta["alone"] where they were timed alone (run/alone.py)."""
    executor, samples = measured.executor, measured.device_samples
    if measured.alone is not None:  # the nodes timed alone (run/alone.py), beside each row
        frame = frame.assign(**measured.alone.columns)
        meta["alone"] = measured.alone.meta
    if trained is None:
        built = build_profile(frame, measured.timings, meta, samples, measured.run_noise)
    else:
        from .training import training_frame, with_backward  # late: loads AOTAutograd
        built = with_backward(build_profile(training_frame(frame, trained), measured.timings,
                                            meta, samples, measured.run_noise), executor, trained)
    return with_user_call(built, measured.call, spare=measured.timings.spare)


def _profile_compiled(given: Arguments) -> Profile:
    """profile() of a torch.compile'd model, or of `model` compiled as `compile` says (True
    or dict(mode=, dynamic=, options=); docs/compiled.md), or of an AOTInductor model (timed
    whole). Other profile() arguments (capture, mode, tracer options) do not apply to
    compiled models; backward=True and profile_memory=True are refused."""
    model, timing, compile = given.model, given.timing, given.compile
    for option, value in (("backward", given.backward),
                          ("profile_memory", given.capture.profile_memory)):
        if value:
            raise PyfxprofError(f"{option}=True is not supported for compiled models yet: "
                                "profile the eager model (compile=None) with it")
    from .compiled_profile import profile_compiled  # late: the compiled path only
    if is_aoti_model(model):
        if compile not in (None, False) or timing.device is not None or timing.device_events:
            raise PyfxprofError("an AOTInductor model is already compiled and placed: leave "
                                "compile=, device= and device_events= unset")
        if timing.nvtx:
            raise PyfxprofError("nvtx=True needs nodes timed one by one; an AOTInductor model "
                                "is timed whole")
        return profile_aoti(given)
    eager, settings = compile_settings(model, compile)
    assert settings is not None, "a compiled model, or compile= given, has its settings"
    return profile_compiled(given, eager, settings)


def build_profile(frame: pd.DataFrame, timings: RunTimings, meta: dict,
                  device_samples: np.ndarray | None = None,
                  run_noise: np.ndarray | None = None) -> Profile:
    """A Profile from an executor's timings (overhead already subtracted: see
    Calibration.correct); sets the coverage (the nodes' share of the run), the time between
    nodes (when the executor measured it), the frame's last column from the time between
    graphs (when stamped: timing.graph_spans) and the device summary when there are device
    samples. `run_noise`
    (run.noise) is kept only when it has one row per complete run.

    Example:
        >>> t = RunTimings(np.array([[100, 50]]), np.array([200]), np.array([0]), 0)
        >>> frame = pd.DataFrame({"index": [0, 1], "name": ["a", "b"], "op": "call_function",
        ...     "target": "f", "module_path": "", "module_type": "M", "module_stack": [(), ()]})
        >>> prof = build_profile(frame, t, {})
        >>> prof.samples.tolist(), prof.meta["coverage"]
        ([[100, 50]], 0.75)
    """
    if timings.intervals.shape[0] == 0:
        raise PyfxprofError("no complete run was recorded (the record buffer dropped "
                            f"{meta.get('dropped_records', 0)} records); raise the buffer cap "
                            "or lower runs")
    samples, totals = timings.intervals, timings.run_totals
    meta["coverage"] = run_coverage(samples, totals)
    if timings.between_nodes is not None:
        meta["between_nodes_ns"] = float(np.median(timings.between_nodes))
    if timings.between_graphs is not None:  # the (between graphs) row, last in the frame
        samples = np.hstack([samples, timings.between_graphs[:, None]])
    if device_samples is not None:
        device_samples = device_samples[:samples.shape[0]]
        frame = add_device_summary(frame, samples, device_samples, totals, meta)
    if run_noise is not None and (timings.incomplete_runs or len(run_noise) != len(totals)):
        run_noise = None  # a run lost records: its noise row cannot be matched to it
    return Profile(frame, samples, totals, meta, device_samples=device_samples,
                   run_starts=timings.run_starts, run_noise=run_noise)


def remember_model(profile: Any, model: Any) -> Any:
    """Keep a weak reference to `model` for `profile` (returned as given).

    Example:
        >>> import torch
        >>> class P: pass
        >>> net, prof = torch.nn.ReLU(), P()
        >>> remember_model(prof, net) is prof and live_model(prof) is net
        True
    """
    try:
        reference = weakref.ref(model)
    except TypeError:  # an object without weak references (a builtin): nothing to find later
        return profile
    key = id(profile)
    _LIVE[key] = reference
    weakref.finalize(profile, _LIVE.pop, key, None)
    return profile
