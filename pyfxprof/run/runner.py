"""`pyfxprof.profile`: capture, analyse (untimed), instrument, calibrate, run, and build a Profile."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import pandas as pd
import torch

from ..capture.analysis import analyse, describe
from ..capture.collectives import with_explicit_waits
from ..capture.inputs import BoundInputs, bind_inputs, split_inputs
from ..capture.model_state import evaluation_mode, grad_context
from ..capture.node_table import module_calls_frame, nodes_frame
from ..capture.tracing import (Capture, CaptureFallbackWarning, capture as capture_model,
                               fallback_capture, timed_nodes)
from ..data.profile import Profile
from ..data.validate import run_coverage
from ..errors import PyfxprofError
from ..timing.device_events import add_device_summary, ensure_cuda_runtime, place_on_device
from ..timing.durations import RunTimings
from ..timing.executors import MODES, make_executor
from ..timing.failures import run_failure
from ..timing.hooks import HookAnalysis, HooksExecutor, hooks_or_whole
from ..timing.recorder import RECORDER
from ..timing.run_table import check_fits_in_memory
from .metadata import run_meta
from .noise import RunMeter
from .progress import Progress


def profile(model: torch.nn.Module = None, example_inputs: Any = (), runs: int = 50,
            warmup: int = 10, mode: str = "codegen", *, grad: bool = False,
            name: str | None = None, leaf_modules: Iterable = (), autowrap_functions: Iterable = (),
            concrete_args: dict | None = None, capture: str = "auto", progress: bool = True,
            device: str | None = None, device_events: bool | None = None,
            **torch_profiler_options) -> Profile:
    """Time every node of `model` on `example_inputs` and return a Profile.

    The model runs in eval mode under torch.inference_mode() (``grad=True`` keeps autograd)
    and is never modified: every training flag is restored afterwards. Shapes and output sizes
    come from one separate untimed run. The calibrated cost of a mark is subtracted from every
    node and stated in the Profile's metadata.

    Args:
        example_inputs: a tuple of positional arguments, a dict of keyword arguments, or one
            tensor.
        runs, warmup: timed runs kept, and untimed runs before them.
        mode: "codegen" (one native mark per node boundary, recompiled) or "interpreter".
        capture: "auto" (FX trace, with the fallback ladder of docs/capture.md when tracing
            fails: leaf the failing submodule, module hooks, whole model), or one forced mode:
            "fx", "hooks" (leaf modules timed by forward hooks) or "whole" (one node).
        leaf_modules, autowrap_functions, concrete_args: passed to the FX tracer.
        device: run on this device ("cuda", "cuda:1", "cpu"); a model elsewhere is profiled
            as a copy moved there (the original stays put). None: where the model is.
        device_events: also time each node on the GPU with CUDA events (default: on for
            CUDA models). Needs a usable CUDA runtime (see docs/gpu.md).

    Example:
        >>> prof = profile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()),
        ...                (torch.randn(4, 8),), runs=5, warmup=1)
        >>> prof.n_nodes, prof.n_runs
        (2, 5)
    """
    _refuse_context_manager_use(model, torch_profiler_options)
    _check_arguments(model, runs, warmup, mode)
    model, example_inputs = place_on_device(model, example_inputs, device)
    device_events = _device_events_for(model, example_inputs, device_events)
    with evaluation_mode(model), grad_context(grad):
        prepared = prepare(model, example_inputs, capture,
                           (leaf_modules, autowrap_functions, concrete_args))
        warn_fallback(prepared.captured, capture)
        drops_before = RECORDER.start()  # an empty buffer; this profile's drops only
        check_fits_in_memory(runs, len(prepared.frame), 2 if device_events else 1)
        executor = executor_for(model, prepared, mode, device_events)
        with executor:
            timings, run_noise, warmup_totals = _timed_runs(
                executor, prepared.args, runs, warmup, progress,
                prepared.frame["name"].tolist())
    captured, args, frame = prepared.captured, prepared.args, prepared.frame
    meta = run_meta(model, name, device=device_of(model, args), device_events=device_events,
                    executor=executor, captured=captured, timings=timings, warmup=warmup,
                    mode=executor.mode, grad=grad, input_shapes=describe(args),
                    dropped_records=RECORDER.dropped_total - drops_before,
                    flops=prepared.flops, warmup_totals_ns=warmup_totals,
                    **prepared.memory_meta)
    return build_profile(frame, timings, meta, executor.device_samples(), run_noise)


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


def _refuse_context_manager_use(model: Any, options: dict) -> None:
    """torch.profiler habits (no model, `activities=`, `schedule=`...) fail before any work."""
    if model is None or options:
        what = "no model" if model is None else f"unexpected arguments {sorted(options)}"
        raise PyfxprofError(f"pyfxprof.profile(model, inputs) times a model and returns a "
                            f"Profile ({what}); for `with ... as p:` loops like torch.profiler "
                            "use `with pyfxprof.Profiler(model, schedule=...) as p:`")


def _check_arguments(model: Any, runs: int, warmup: int, mode: str) -> None:
    if not isinstance(model, torch.nn.Module):
        raise PyfxprofError(f"expected a torch.nn.Module to profile, got {type(model).__name__}")
    if mode not in MODES:
        raise PyfxprofError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not isinstance(runs, int) or runs < 1:
        raise PyfxprofError(f"runs must be a positive integer, got {runs!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise PyfxprofError(f"warmup must be a non-negative integer, got {warmup!r}")


def positional_inputs(target: torch.nn.Module, example_inputs: Any) -> tuple:
    """`example_inputs` (tuple, list, dict of keyword arguments, BoundInputs, or one value)
    bound to `target`'s forward (see pyfxprof.capture.inputs.bind_inputs), as the tuple of
    positional arguments it is called with; refused when keywords would be left over (a
    graph's placeholders are positional).

    Example:
        >>> gm = torch.fx.symbolic_trace(torch.nn.Linear(2, 2))
        >>> len(positional_inputs(gm, {"input": torch.zeros(1, 2)}))
        1
    """
    bound = bind_inputs(target, *split_inputs(example_inputs))
    if bound.kwargs:
        raise PyfxprofError(f"keywords {', '.join(bound.kwargs)} reach "
                            f"{type(target).__name__}.forward only through **kwargs, which a "
                            "traced graph cannot receive — use capture='auto' or 'hooks'")
    return bound.args


def _run_once(executor, args: tuple, run: str, names: list[str]) -> None:
    """One run; an exception from the model becomes one line naming the run and the node."""
    try:
        executor.run(args)
    except PyfxprofError:
        raise
    except Exception as error:  # the user's model: report it, leave the recorder clean
        raise run_failure(executor.failed_node(names), run, error) from error


def _timed_runs(executor, args: tuple, runs: int, warmup: int, progress: bool,
                names: list[str]) -> tuple[RunTimings, np.ndarray | None, list[int]]:
    """The timings, the per-run noise (run.noise) and the warm-up runs' wall ns (None for
    those preempted); `names` of the frame's nodes name a node that raises."""
    meter = RunMeter()
    started = time.perf_counter()
    meter.read()
    for done in range(1, warmup + 1):
        _run_once(executor, args, f"warm-up run {done} of {warmup}", names)
        meter.read()
    per_run = (time.perf_counter() - started) / warmup if warmup else 0.0
    warmup_noise = meter.between_reads()
    meter.clear()
    executor.reset(runs)
    bar = Progress(runs, "profiling", per_run * runs if progress else 0.0)
    meter.read()
    for done in range(1, runs + 1):
        _run_once(executor, args, f"timed run {done} of {runs}", names)
        meter.read()
        bar.update(done)
    bar.close()
    warmup_totals = [] if warmup_noise is None else [  # None: a preempted warm-up run
        None if switches else wall for switches, wall in warmup_noise[:, [0, 3]].tolist()]
    return executor.timings(), meter.between_reads(), warmup_totals


@dataclass
class Prepared:
    """A captured model after its untimed analysis run, ready to be timed."""

    captured: Capture
    args: tuple
    frame: pd.DataFrame                   # the nodes table, with the analysis columns
    flops: int                            # FLOPs of the whole analysis run
    analysis: HookAnalysis | None = None  # hooks and whole captures only
    memory_meta: dict = field(default_factory=dict)  # the CUDA peak, when measured
    kwargs: dict = field(default_factory=dict)  # keywords of each call (hooks and whole only)


def prepare(model: torch.nn.Module, example_inputs: Any, capture_mode: str = "auto",
            tracer_options: tuple = ((), (), None)) -> Prepared:
    """Capture (the fallback ladder in "auto" mode), then the untimed analysis run; a traced
    graph that fails where the eager model runs falls back to hooks too.

    `tracer_options` is (leaf_modules, autowrap_functions, concrete_args). The analysis run
    uses the model in the mode and grad state the caller set.

    Example:
        >>> p = prepare(torch.nn.Sequential(torch.nn.ReLU()), (torch.zeros(2),))
        >>> p.captured.mode, p.frame["output_shapes"].tolist()
        ('fx', ['[2] float32'])
    """
    captured = capture_model(model, *tracer_options, mode=capture_mode)
    if captured.graph_module is not None:
        captured.graph_module = with_explicit_waits(captured.graph_module)
    traced = captured.graph_module
    if traced is not None:
        bound = bind_inputs(traced, *split_inputs(example_inputs))
        if bound.kwargs and capture_mode == "auto":
            note = (f"keywords {', '.join(bound.kwargs)} go to forward's **kwargs, which the "
                    "traced graph cannot receive — using module hooks")
            captured = fallback_capture(model, tracer_options[0], captured.notes + [note])
            traced = None
    if traced is not None:
        args = positional_inputs(traced, example_inputs)
        nodes = timed_nodes(traced.graph)
        if not nodes:
            raise PyfxprofError(f"{type(model).__name__} has no operations to time "
                                "(its graph only passes inputs through)")
        try:
            _, info = analyse(traced, args)
        except PyfxprofError as error:
            if capture_mode != "auto" or not _runs_eagerly(model, args):
                raise
            note = f"the traced graph fails where the model runs ({error}) — using module hooks"
            captured = fallback_capture(model, tracer_options[0], captured.notes + [note])
        else:
            infos = [info.get(node.name, {}) for node in nodes]
            frame = with_analysis_columns(nodes_frame(nodes, traced), infos)
            return Prepared(captured, args, frame, int(frame["flops"].sum()),
                            memory_meta=_model_peak_meta(infos))
    bound = bind_inputs(model, *split_inputs(example_inputs))
    captured, analysis = hooks_or_whole(model, captured, bound)
    calls = [(captured.leaves[k][0], type(captured.leaves[k][1]).__name__) for k in analysis.calls]
    frame = with_analysis_columns(module_calls_frame(calls, type(model).__name__), analysis.info)
    return Prepared(captured, bound.args, frame, analysis.flops, analysis, kwargs=bound.kwargs)


def _runs_eagerly(model: torch.nn.Module, args: tuple) -> bool:
    try:
        model(*args)
    except Exception:  # the inputs do not fit the model itself: report the graph's error
        return False
    return True


def with_analysis_columns(frame: pd.DataFrame, infos: list[dict]) -> pd.DataFrame:
    """`frame` plus the analysis columns: input_shapes, output_shapes, out_bytes, flops."""
    for column in ("input_shapes", "output_shapes"):
        frame[column] = [info.get(column, "") for info in infos]
    for column in ("out_bytes", "flops"):
        frame[column] = np.array([info.get(column, 0) for info in infos], dtype=np.int64)
    for column in ("alloc_delta_bytes", "peak_bytes"):  # CUDA allocator statistics only
        if any(column in info for info in infos):
            frame[column] = np.array([info.get(column, 0) for info in infos], dtype=np.int64)
    return frame


def _model_peak_meta(infos: list[dict]) -> dict:
    """The CUDA allocator's peak over the analysis run, when it was measured."""
    peaks = [info["model_peak_bytes"] for info in infos if "model_peak_bytes" in info]
    return {"cuda_peak_bytes": int(max(peaks))} if peaks else {}


def executor_for(model: torch.nn.Module, prepared: Prepared, mode: str, device_events: bool):
    """The graph's executor for `mode`, or the hooks executor for hooks and whole captures
    (which time the host only: a note says so when device events were asked for).

    Example:
        >>> model = torch.nn.Sequential(torch.nn.ReLU())
        >>> type(executor_for(model, prepare(model, (torch.zeros(2),)), "codegen", False)).__name__
        'CodegenExecutor'
    """
    if prepared.analysis is None:
        return make_executor(mode, prepared.captured.graph_module, len(prepared.frame),
                             device_events)
    if device_events:
        prepared.captured.notes.append("device timing needs an FX capture: host times only")
    return HooksExecutor(model, prepared.captured.leaves, prepared.analysis, prepared.kwargs)


def warn_fallback(captured: Capture, capture_mode: str) -> None:
    """One warning when "auto" capture could not use a plain FX trace, saying what it did."""
    if capture_mode == "auto" and captured.mode != "fx":
        warnings.warn(f"pyfxprof: {'; '.join(captured.notes)} (capture mode "
                      f"{captured.mode!r})", CaptureFallbackWarning, stacklevel=3)


def device_of(model: torch.nn.Module, args: tuple) -> str:
    """Device of the model's first parameter, else of the first tensor input, else "cpu"."""
    for tensor in list(model.parameters())[:1] + [a for a in args if isinstance(a, torch.Tensor)]:
        return str(tensor.device)
    return "cpu"


def build_profile(frame: pd.DataFrame, timings: RunTimings, meta: dict,
                  device_samples: np.ndarray | None = None,
                  run_noise: np.ndarray | None = None) -> Profile:
    """A Profile from an executor's timings (overhead already subtracted: see
    Calibration.correct); sets the coverage, the time between nodes (when the executor
    measured it) and the device summary when there are device samples. `run_noise`
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
    if device_samples is not None:
        device_samples = device_samples[:samples.shape[0]]
        frame = add_device_summary(frame, samples, device_samples, totals, meta)
    if run_noise is not None and (timings.incomplete_runs or len(run_noise) != len(totals)):
        run_noise = None  # a run lost records: its noise row cannot be matched to it
    return Profile(frame, samples, totals, meta, device_samples=device_samples,
                   run_starts=timings.run_starts, run_noise=run_noise)
