"""`pyfxprof.profile`: capture, analyse (untimed), instrument, calibrate, run, and build a Profile."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
import pandas as pd
import torch

from ..capture.analysis import describe
from ..capture.dynamo import GRANULARITIES
from ..capture.exported import exported_module, is_exported
from ..capture.inductor import compile_settings, is_compiled
from ..capture.inputs import split_inputs
from ..capture.ladder import Prepared, check_model, copied_inputs, prepare, warn_fallback
from ..capture.memory import profiling_memory
from ..capture.source import keeping_library_frames
from ..capture.model_state import (autograd_mode, evaluation_mode, grad_context,
                                   keeping_rng_state, numeric_mode)
from ..data.rungs import CAPTURE_MODES, RUNG
from ..capture.tracing import fx_sources_released
from ..data.op_names import range_names
from ..data.profile import Profile
from ..data.validate import run_coverage
from ..errors import PyfxprofError
from ..capture.placement import place_on_device
from ..data.device_summary import add_device_summary
from ..timing.device_events import ensure_cuda_runtime
from ..timing.durations import RunTimings
from ..timing.executors import MODES, make_executor
from ..timing.failures import node_kind, run_failure
from ..timing.graph_spans import GraphsExecutor
from ..timing.hook_timing import HooksExecutor
from ..timing.nvtx import name_ranges
from ..timing.recorder import RECORDER
from ..timing.run_table import check_fits_in_memory
from .aoti import is_aoti_model, profile_aoti
from .capture_cache import CAPTURES
from .metadata import run_meta
from .noise import RunMeter
from .profiler_keywords import torch_profiler_keywords
from .progress import Progress
from .user_call import UserCall, user_call_timed, with_user_call
from .wall_clock import StepClock

if TYPE_CHECKING:
    from torch.export import ExportedProgram

#: The choices of profile()'s capture=, granularity= and mode=, defined in capture and timing
#: and read from here by the CLI (which imports the run stage only).
CHOICES = {"capture": CAPTURE_MODES, "granularity": GRANULARITIES, "mode": MODES}


@fx_sources_released()
@keeping_rng_state
def profile(model: torch.nn.Module | Callable[..., Any] | ExportedProgram | None = None,
            example_inputs: Any = (), runs: int = 50,
            warmup: int = 10, mode: str = "codegen", *, grad: bool = False,
            name: str | None = None, leaf_modules: Iterable = (), autowrap_functions: Iterable = (),
            concrete_args: dict | None = None, capture: str = "auto", progress: bool = True,
            device: str | None = None, device_events: bool | None = None,
            granularity: str = "function", profile_memory: bool = False,
            library_frames: bool = False, compile: bool | dict | None = None,
            backward: bool = False, loss_fn: Callable | None = None, nvtx: bool = False,
            **torch_profiler_options) -> Profile:
    """Time every node of `model` on `example_inputs` and return a Profile.

    Runs the model in eval mode under torch.inference_mode() (``grad=True``: autograd), never
    modified (meta: _modes_meta); shapes from one untimed run; mark cost subtracted (meta).

    Args:
        example_inputs: a tuple of positional arguments, a dict of keyword arguments, a
            pyfxprof.BoundInputs (both), or one tensor; copied, never run on themselves.
        runs, warmup: timed runs kept, and untimed runs before them. compile: docs/compiled.md.
        mode: "codegen" (one native mark per node boundary, recompiled) or "interpreter".
        capture: "auto" (the ladder of docs/capture.md) or one forced rung: "fx", "dynamo",
            "hooks" or "whole". granularity: "function" (default) or "aten" (dynamo).
        leaf_modules, autowrap_functions, concrete_args: passed to the FX tracer.
        device: run on this device ("cuda", "cuda:1", "cpu"); a model elsewhere is profiled
            as a copy moved there (the original stays put). None: where the model is.
        device_events: also time each node on the GPU with CUDA events (default: on for
            CUDA models). Needs a usable CUDA runtime (see docs/gpu.md).
        profile_memory: each node's allocated, freed and peak bytes, untimed (docs/profile.md).
        library_frames: keep torch's and transformers' frames in `source` lines (docs/profile.md).
        backward, loss_fn: training steps (docs/profile.md). nvtx: NVTX ranges (docs/gpu.md).

    Example:
        >>> prof = profile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()),
        ...                (torch.randn(4, 8),), runs=5, warmup=1)
        >>> prof.n_nodes, prof.n_runs
        (2, 5)
    """
    model, device_events = _check_arguments(**locals())  # the arguments as given
    if is_compiled(model) or is_aoti_model(model) or compile not in (None, False):
        return _profile_compiled(**locals())  # the arguments as given
    own, (model, example_inputs) = model, place_on_device(model, example_inputs, device)
    device_events = _device_events_for(model, example_inputs, device_events)
    given_training, clock = model.training, StepClock()
    with evaluation_mode(model, not backward), grad_context(grad or backward):
        prepared, executor, keep = _prepared_timed(clock, model, own, example_inputs, (
            device_events, profile_memory, backward, library_frames), (
            capture, (leaf_modules, autowrap_functions, concrete_args), granularity, mode, grad))
        warn_fallback(prepared.captured, capture)
        drops_before = RECORDER.start()  # an empty buffer; this profile's drops only
        executor = _ready_executor(executor, keep, model, prepared,
                                   (mode, device_events, nvtx, clock, runs))
        timings, run_noise, warmup_totals, executor, call = _measured(executor, prepared, (
            model, example_inputs, loss_fn, backward, runs, warmup, progress), clock)
        modes = _modes_meta(model, given_training, example_inputs)
    meta = _profile_meta(model, name, prepared, executor, timings, example_inputs, **modes,
                         device_events=device_events, warmup=warmup, grad=grad,
                         dropped_records=RECORDER.dropped_total - drops_before,
                         warmup_totals_ns=warmup_totals, wall_s=clock.seconds)
    return with_user_call(_built(prepared.frame, timings, meta, executor, run_noise,
                                 model if backward else None), call)


def _prepared_timed(clock: StepClock, *args: Any) -> tuple[Prepared, Any, Callable]:
    """_prepared(*args), its wall time in `clock`: the analysis run's as "analysis", the rest
    as "capture"."""
    with clock.step("capture"):
        found = _prepared(*args)
    clock.moved("capture", "analysis", found[0].analysis_s)
    return found


def _instrumented(clock: StepClock, *args: Any):
    """executor_for(*args), its wall time (instrumenting, calibrating) in `clock`."""
    return clock.timed("instrument", executor_for, *args)


def _built(frame: pd.DataFrame, timings: RunTimings, meta: dict, executor, run_noise,
           trained: torch.nn.Module | None) -> Profile:
    """build_profile of a run, and of a training run (`trained`: the model) its backward."""
    if trained is None:
        return build_profile(frame, timings, meta, executor.device_samples(), run_noise)
    from .training import training_frame, with_backward  # late: loads AOTAutograd
    return with_backward(build_profile(training_frame(frame, trained), timings, meta,
                                       executor.device_samples(), run_noise), executor, trained)


def _ready_executor(executor, keep: Callable, model: torch.nn.Module, prepared: Prepared,
                    options: tuple):
    """The cached `executor`, else a new one that `keep` keeps for the next calls (its wall
    time in the clock), with its NVTX ranges named as `options` (mode, device_events, nvtx,
    clock, runs) ask (none: reset); first, a one-line error when `runs` cannot fit in memory."""
    mode, device_events, nvtx, clock, runs = options
    check_fits_in_memory(runs, len(prepared.frame), 2 if device_events else 1)
    executor = executor or keep(_instrumented(clock, model, prepared, mode, device_events))
    name_ranges(executor, range_names(prepared.frame) if nvtx else None)
    return executor


def _measured(executor, prepared: Prepared, given: tuple, clock: StepClock) -> tuple:
    """(timings, run noise, warm-up totals, executor, call): _timed_runs of `executor`, as
    training steps when backward (`given`: model, inputs, loss_fn, backward, runs, warmup,
    progress), with the user's own call (run.user_call) timed between the runs (None for
    training steps, and for module-hooks and whole captures, whose runs are the user's call
    itself, its hooks firing; and inside run.user_call.graph_runs_only)."""
    model, example_inputs, loss_fn, backward, *loop = given
    own_run = backward or RUNG[prepared.captured.mode].own_call  # the model's own call
    call = None if own_run or not user_call_timed() else UserCall(
        model, example_inputs, device_of(model, prepared.args),
        (prepared.captured.graph_module, prepared.args))
    with _training(executor, backward, prepared, model, loss_fn, example_inputs) as executor:
        return (*_timed_runs(executor, prepared.args, *loop, prepared.frame, call, clock),
                executor, call)


def _training(executor, backward: bool, prepared: Prepared, model: torch.nn.Module,
              loss_fn: Callable | None, example_inputs: Any):
    """`executor` wrapped to run training steps (run.training) when `backward`, else itself
    (the wrapper is never cached: only the graph executor inside it)."""
    if not backward:
        return executor
    from .training import TrainingExecutor  # late: loads AOTAutograd
    return TrainingExecutor(executor, prepared, model, loss_fn, example_inputs)


def _profile_compiled(model: torch.nn.Module, example_inputs: Any, runs: int, warmup: int, *,
                      compile: bool | dict | None, name: str | None, progress: bool, grad: bool,
                      device: str | None, device_events: bool | None, backward: bool = False,
                      profile_memory: bool = False, nvtx: bool = False, **_: Any) -> Profile:
    """profile() of a torch.compile'd model, or of `model` compiled as `compile` says (True
    or dict(mode=, dynamic=, options=); docs/compiled.md), or of an AOTInductor model (timed
    whole). Other profile() arguments (capture, mode, tracer options) do not apply to
    compiled models; backward=True and profile_memory=True are refused."""
    for option, value in (("backward", backward), ("profile_memory", profile_memory)):
        if value:
            raise PyfxprofError(f"{option}=True is not supported for compiled models yet: "
                                "profile the eager model (compile=None) with it")
    from .compiled_profile import profile_compiled  # late: the compiled path only
    if is_aoti_model(model):
        if compile not in (None, False) or device is not None or device_events:
            raise PyfxprofError("an AOTInductor model is already compiled and placed: leave "
                                "compile=, device= and device_events= unset")
        if nvtx:
            raise PyfxprofError("nvtx=True needs nodes timed one by one; an AOTInductor model "
                                "is timed whole")
        return profile_aoti(model, example_inputs, runs, warmup, name=name, progress=progress,
                            timed_runs=_timed_runs)
    eager, settings = compile_settings(model, compile)
    return profile_compiled(model, eager, settings, example_inputs, runs, warmup, name=name,
                            progress=progress, grad=grad, placement=(device, device_events),
                            timed_runs=_timed_runs, device=device_of(eager, ()), nvtx=nvtx,
                            cache_key=_cache_key(example_inputs, True, (grad,)))


def _modes_meta(model: torch.nn.Module, given_training: bool, example_inputs: Any) -> dict:
    """The modes the model ran in (``training`` False: profile() runs it in eval mode;
    ``given_training``: the caller's flag; ``autograd``: see model_state.autograd_mode; the
    numeric mode: model_state.numeric_mode). Called inside profile()'s eval and grad
    contexts."""
    return {"training": False, "given_training": given_training, "autograd": autograd_mode(),
            **numeric_mode(model, example_inputs)}  # the caller's autocast: profile() sets none


def _cache_key(example_inputs: Any, cacheable: bool, options: tuple) -> tuple | None:
    """What a graph capture of profile() is reused for (run/capture_cache.py): every
    argument's dtype, shape, device and requires_grad (plain values by value) and the
    options; None (not cached) when not `cacheable` or an argument is anything else (a
    cache object, a list of tensors), whose contents the capture may depend on."""
    if not cacheable:
        return None
    key = []
    args, kwargs = split_inputs(example_inputs)
    for name, value in [*enumerate(args), *kwargs.items()]:
        if isinstance(value, torch.Tensor):
            key.append((name, value.dtype, tuple(value.shape), value.device,
                        value.requires_grad))
        elif type(value) in (int, float, bool, str, type(None)):
            key.append((name, value))
        else:
            return None
    return ("profile", tuple(key), *(repr(option) for option in options))


def _prepared(model: torch.nn.Module, own: torch.nn.Module, example_inputs: Any,
              flags: tuple[bool, ...], options: tuple) -> tuple[Prepared, Any, Callable]:
    """(a Prepared, its executor or None, keep): a graph capture cached for these inputs'
    signature and `options` (capture, tracer options, granularity, mode, grad) with the
    graph arguments of these inputs and its executor, else prepare()'s capture, None and
    ``keep(executor)`` that keeps a graph capture (not hooks or whole; several Dynamo graphs
    too, their executor then keeping its graphs after each profile) with its executor for
    the next calls and returns the executor. Nothing is cached for a
    `model` that is not the user's `own` (a copy moved to the device asked for) or with
    `flags` (device events, profile_memory, backward: a train-mode capture, library_frames)
    on."""
    profile_memory, library_frames = flags[1], flags[3]
    key = _cache_key(example_inputs, model is own and not any(flags), options)
    found = None if key is None else CAPTURES.lookup(model, key)
    if found is not None:
        prepared, executor = found
        bound = copied_inputs(model, example_inputs)  # as prepare() copies them
        if isinstance(executor, GraphsExecutor):  # Dynamo's code takes the call as bound
            executor.kwargs = bound.kwargs
            return replace(prepared, args=bound.args, kwargs=bound.kwargs,
                           analysis_s=0.0), executor, None
        args = prepared.captured.graph_args(bound.args, bound.kwargs)
        return replace(prepared, args=args, analysis_s=0.0), executor, None
    with profiling_memory(profile_memory), keeping_library_frames(library_frames):
        prepared = prepare(model, example_inputs, *options[:3])

    def keep(executor: Any) -> Any:
        if key is not None and prepared.analysis is None:
            CAPTURES.keep(model, key, (prepared, executor))
            if isinstance(executor, GraphsExecutor):
                executor.releases = False
        return executor
    return prepared, None, keep


def _profile_meta(model: torch.nn.Module, name: str | None, prepared: Prepared, executor,
                  timings: RunTimings, example_inputs: Any, **figures) -> dict:
    """The run's metadata (run.metadata.run_meta) from what profile() prepared and measured."""
    return run_meta(model, name, device=device_of(model, prepared.args), executor=executor,
                    captured=prepared.captured, timings=timings, mode=executor.mode,
                    flops=prepared.flops, input_shapes=_inputs_shown(example_inputs, prepared),
                    **figures, **prepared.memory_meta)


def _device_events_for(model: torch.nn.Module, example_inputs: Any,
                       device_events: bool | None) -> bool:
    """Whether to time on the device with CUDA events: as asked, else on for CUDA models;
    when on, the CUDA runtime must be usable."""
    if device_events is None:
        inputs = example_inputs if isinstance(example_inputs, tuple) else ()
        device_events = device_of(model, inputs).startswith("cuda")
    if device_events:
        ensure_cuda_runtime()
    return device_events


def _inputs_shown(example_inputs: Any, prepared: Prepared) -> str:
    """Shapes of the inputs as the caller gave them (a dynamo graph's args add parameters)."""
    if isinstance(example_inputs, dict) or prepared.captured.graph_inputs is not None:
        return describe(example_inputs)
    return describe(prepared.args)


def _check_arguments(model: Any, runs: int, warmup: int, mode: str, device_events: bool | None,
                     torch_profiler_options: dict, backward: bool = False,
                     **_: Any) -> tuple[Any, bool | None]:
    """(the model to run: an ExportedProgram's module, docs/capture.md; device_events as
    torch.profiler's keywords set it, run/profiler_keywords.py), or a one-line error for
    arguments profile() cannot take."""
    if model is None:  # a torch.profiler habit: `with profile(...) as p:`
        raise PyfxprofError("pyfxprof.profile(model, inputs) times a model and returns a "
                            "Profile (no model); for `with ... as p:` loops like torch.profiler "
                            "use `with pyfxprof.Profiler(model, schedule=...) as p:`")
    model = exported_module(model)
    device_events = torch_profiler_keywords(torch_profiler_options, device_events)
    if backward and is_exported(model):
        raise PyfxprofError("backward=True needs the eager model: an exported program is an "
                            "inference graph; profile the nn.Module it was exported from")
    if not is_aoti_model(model):
        check_model(model)
    if mode not in MODES:
        raise PyfxprofError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not isinstance(runs, int) or runs < 1:
        raise PyfxprofError(f"runs must be a positive integer, got {runs!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise PyfxprofError(f"warmup must be a non-negative integer, got {warmup!r}")
    return model, device_events


def _run_once(executor, args: tuple, run: str, frame: pd.DataFrame) -> None:
    """One run; an exception from the model becomes one line naming the run and the node (an
    interrupt passes through, the executor's records drained)."""
    try:
        executor.run(args)
    except PyfxprofError:
        raise
    except Exception as error:  # the user's model: report it, leave the recorder clean
        node = executor.failed_node(frame["name"].tolist())
        raise run_failure(node, run, error, node_kind(frame, node)) from error
    except BaseException:  # an interrupt: the run's marks drained, none left for the next one
        executor.reset()
        raise


def _timed_runs(executor, args: tuple, runs: int, warmup: int, progress: bool,
                frame: pd.DataFrame, call: UserCall | None = None,
                clock: StepClock | None = None
                ) -> tuple[RunTimings, np.ndarray | None, list[int]]:
    """The timings, the per-run noise (run.noise) and the warm-up runs' wall ns (None for
    those preempted); the nodes `frame` names a node that raises. `call`: the user's own
    call, timed after each timed run (outside its noise reads) and profiled by function
    after the warm-up (after the runs without warm-up runs: run.user_call). `clock` gets the
    wall time of the warm-up and the timed runs."""
    clock = clock or StepClock()
    meter = RunMeter()
    started = time.perf_counter()
    meter.read()
    for done in range(1, warmup + 1):
        _run_once(executor, args, f"warm-up run {done} of {warmup}", frame)
        meter.read()
    clock.add("warmup", time.perf_counter() - started)
    per_run = (time.perf_counter() - started) / warmup if warmup else 0.0
    warmup_noise = meter.between_reads()
    if call is not None:
        with clock.step("user_call"):
            call.before_runs(lambda: executor.run(args), warmup)
    meter.clear()
    executor.reset(runs)
    bar = Progress(runs, "profiling", per_run * runs if progress else 0.0)
    with clock.step("timed_runs"):
        meter.read()
        for done in range(1, runs + 1):
            _run_once(executor, args, f"timed run {done} of {runs}", frame)
            meter.read()
            if call is not None and call.interleaved:  # its interval is left out of the noise
                call.time_once()
                meter.read()
            bar.update(done)
        bar.close()
    run_noise = meter.between_reads()
    if call is not None and call.interleaved and run_noise is not None:
        run_noise = run_noise[0::2]
    warmup_totals = [] if warmup_noise is None else [  # None: a preempted warm-up run
        None if switches else wall for switches, wall in warmup_noise[:, [0, 3]].tolist()]
    timings = executor.timings()
    if call is not None:
        call.after_runs(runs)
    return timings, run_noise, warmup_totals


def executor_for(model: torch.nn.Module, prepared: Prepared, mode: str, device_events: bool):
    """The graph's executor for `mode`, or the hooks executor for hooks and whole captures
    (which time the host only: a note says so when device events were asked for).

    Example:
        >>> model = torch.nn.Sequential(torch.nn.ReLU())
        >>> type(executor_for(model, prepare(model, (torch.zeros(2),)), "codegen", False)).__name__
        'CodegenExecutor'
    """
    if prepared.captured.graph_module is None and prepared.captured.frame is not None:
        if mode != "codegen" or device_events:  # a call Dynamo split into several graphs
            prepared.captured.notes.append("several Dynamo graphs are timed by codegen on "
                                           "the host only")
        return GraphsExecutor(prepared.captured.frame, prepared.kwargs)
    if prepared.analysis is None:
        return make_executor(mode, prepared.captured.graph_module, len(prepared.frame),
                             device_events)
    if device_events:
        prepared.captured.notes.append("device timing needs an FX capture: host times only")
    return HooksExecutor(model, prepared.captured.leaves, prepared.analysis, prepared.kwargs)


def device_of(model: torch.nn.Module, args: tuple) -> str:
    """Device of the model's first parameter, else of the first tensor input, else "cpu"."""
    for tensor in list(model.parameters())[:1] + [a for a in args if isinstance(a, torch.Tensor)]:
        return str(tensor.device)
    return "cpu"


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
