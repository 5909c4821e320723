"""profile() of a torch.compile'd model: compile with the user's Inductor settings (plus
provenance tracking), time each kernel call of every compiled graph, each run made inside the
user's own compiled call (guards, wrapper), and build a Profile whose rows are kernels with
their source nodes and modules, plus the time outside kernels up to that call."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from ..capture.inductor import CompileSettings, InductorCapture, is_compiled
from ..capture.inputs import BoundInputs, copied_alike, split_inputs
from ..capture.model_state import autograd_mode, evaluation_mode, grad_context, numeric_mode
from ..capture.placement import device_of
from ..capture.shape_run import describe
from ..capture.node_table import between_graphs_row
from ..capture.provenance import CallSite, kernel_row, kernels_frame, provenance_mapping
from ..capture.tracing import Capture
from ..data.device_summary import add_device_summary
from ..data.op_names import range_names
from ..data.outside_graph import with_compiled_call
from ..data.profile import Profile
from ..data.validate import OUTSIDE_KERNELS, run_coverage
from ..errors import PyfxprofError
from ..timing.compiled_executor import CompiledExecutor, GraphPlan, plan_graph
from ..timing.device_events import ensure_cuda_runtime
from ..timing.durations import RunTimings
from ..timing.nvtx import name_ranges
from ..timing.recorder import RECORDER
from .capture_cache import CAPTURES, cache_key
from .metadata import run_meta
from .timed_runs import timed_runs
from .user_call import UserCall, user_call_timed, with_user_call

if TYPE_CHECKING:
    from .arguments import Arguments, TimingOptions


def graph_rows(plan: GraphPlan, root_type: str) -> list[dict]:
    """The nodes-table rows of one compiled graph: a row per timed kernel call, or one
    "compiled graph N" row covering all its source nodes when it is timed whole."""
    mapping = provenance_mapping(plan.graph)
    if plan.sites:
        return [kernel_row(plan.graph, site, mapping, root_type) for site in plan.sites]
    handles = list(mapping.get("cppCodeToPost", {}))
    mapping = {**mapping, "cppCodeToPost": {"graph:0": [
        post for handle in handles for post in mapping["cppCodeToPost"][handle]]}}
    row = kernel_row(plan.graph, CallSite(0, "compiled graph", "graph:0"), mapping, root_type)
    row.update(name=f"compiled graph {plan.graph.index}", op="compiled_graph")
    return [row]


def compiled_frame(plans: list[GraphPlan], root_type: str) -> pd.DataFrame:
    """The nodes table of a compiled profile: every graph's rows, then the between-graphs row
    (several graphs) and the outside row."""
    return kernels_frame([row for plan in plans for row in graph_rows(plan, root_type)]
                         + _between_rows(plans, root_type) + [outside_row(root_type)])


def outside_row(root_type: str) -> dict:
    """The nodes-table row of the time outside every kernel (the last column of a compiled
    profile's samples)."""
    return {"name": OUTSIDE_KERNELS, "op": "outside_kernels",
            "target": "wrapper Python, allocations, Dynamo guards", "module_path": "",
            "module_type": root_type, "module_stack": (), "inputs": (), "communication": False,
            "source_nodes": (), "source_modules": (), "aten_ops": (), "source_lines": (),
            "graph": -1}


def _between_rows(plans: list[GraphPlan], root_type: str) -> list[dict]:
    """The BETWEEN_GRAPHS row (the eager code at graph breaks) when there are several graphs."""
    if len(plans) < 2:
        return []
    return [{**between_graphs_row(0, root_type), "source_nodes": (), "source_modules": (),
             "aten_ops": (), "source_lines": (), "graph": -1}]


def notes(settings: CompileSettings, plans: list[GraphPlan]) -> list[str]:
    """The capture notes of a compiled profile: the settings, graphs and kernel calls timed."""
    found = [settings.describe(), f"{len(plans)} compiled graph(s), "
             f"{sum(len(p.sites) for p in plans)} kernel calls timed"]
    whole = [p.graph.index for p in plans if not p.sites]
    if whole:
        found.append(f"graph(s) {whole} timed whole: a CUDA graph replay (or cpp_wrapper) "
                     "launches every kernel in one call, so there are no per-kernel times")
    if settings.config.get("triton.cudagraphs") and len(whole) < len(plans):
        found.append("CUDA graphs (mode='reduce-overhead') were asked for but serve CUDA "
                     "graphs only: the other graphs run Inductor's wrapper, timed per kernel")
    return found


def profile_compiled(given: Arguments, module: torch.nn.Module,
                     settings: CompileSettings) -> Profile:
    """pyfxprof.profile() for a compiled model (`module`: the eager module compiled with
    `settings`; ``given.model``: what the user passed), its arguments `given` (checked). It
    runs where the model is: timing.device must be unset. The compiled capture is kept for
    the next profile() of this model on inputs of this signature (compiled_capture()).
    timing.nvtx: an NVTX range per kernel call (timing/nvtx.py). See docs/compiled.md.

    Example:
        >>> from pyfxprof.run.arguments import CAPTURE, TIMING, Arguments
        >>> from pyfxprof.capture.inductor import compile_settings
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
        >>> given = Arguments(net, (torch.ones(2, 4),), 3, 1, False, None, False, True, False,
        ...                   None, CAPTURE, TIMING)
        >>> prof = profile_compiled(given, *compile_settings(net, True))  # doctest: +SKIP
    """
    model, example_inputs, timing = given.model, given.example_inputs, given.timing
    device, device_events = _where_timed(module, timing)
    # inference tensors where the user's are (copied_alike): a copy made under the caller's
    # inference_mode would recompile the user's model (Dynamo's guards tell them apart)
    args, kwargs = copied_alike(split_inputs(example_inputs))
    own = BoundInputs(*copied_alike((args, kwargs)))  # the user's calls' inputs
    given_training = module.training
    with evaluation_mode(module), grad_context(given.grad):
        capture = compiled_capture(module, settings, BoundInputs(args, kwargs),
                                   cache_key(example_inputs, True, (given.grad,)))
        plans = [plan_graph(graph) for graph in capture.graphs]
        root_type = type(module).__name__
        frame = compiled_frame(plans, root_type)
        executor = CompiledExecutor(capture.compiled, kwargs, plans, device_events)
        name_ranges(executor, range_names(frame) if timing.nvtx else None)
        call = None if not user_call_timed() else UserCall(
            model if is_compiled(model) else capture.compiled, example_inputs, device,
            plainly=executor.uninstrumented, breakdown=False, bound=own)
        prof = timed_profile(executor, frame, args, given,
                             dict(name=given.name or f"{root_type} (compiled)", device=device,
                                  grad=given.grad, input_shapes=describe(example_inputs),
                                  captured=Capture(None, "inductor", notes(settings, plans)),
                                  training=False, given_training=given_training,
                                  autograd=autograd_mode(),
                                  **numeric_mode(module, example_inputs)), call)
        if len(capture.graphs) != len(plans):
            raise PyfxprofError("the compiled model recompiled while it was profiled (inputs "
                                "or guards changed between runs); profile it on fixed inputs")
    return prof


def _where_timed(module: torch.nn.Module, timing: TimingOptions) -> tuple[str, bool]:
    """(the compiled `module`'s device, whether its kernels are timed with CUDA events):
    timing.device must be unset (a compiled model runs where it is)."""
    if timing.device is not None:
        raise PyfxprofError("compiled models are profiled where they are: move the model and "
                            "inputs first and leave device= unset")
    device = device_of(module, ())
    device_events = (device.startswith("cuda") if timing.device_events is None
                     else timing.device_events)
    if device_events:
        ensure_cuda_runtime()
    return device, device_events


def timed_profile(executor: CompiledExecutor, frame: pd.DataFrame, args: tuple,
                  given: Arguments, meta: dict, call: UserCall | None = None) -> Profile:
    """The Profile of `executor`'s timed runs of ``given.model`` (as `given` asks: runs,
    warm-up runs, progress) with the timed wrappers swapped in; `meta`: run_meta's name,
    device, grad, input_shapes and captured. `call`: the user's compiled call (the model the
    user passed, or the model profile(compile=...) compiled), each run made inside it and it
    timed plainly after them (run/user_call.py), its figures in ``meta["call"]`` and the
    outside row (data.outside_graph.with_compiled_call); None: the runs alone."""
    drops_before = RECORDER.start()
    with executor:
        timings, run_noise, warmup_totals, warmup, device_samples, counters = timed_runs(
            executor, args, given.runs, given.warmup, given.progress, frame, call)
    name = meta.pop("name")
    meta = run_meta(given.model, name, device_events=executor.device is not None,
                    executor=executor, timings=timings,
                    warmup=warmup, warmup_auto=given.warmup == "auto", mode="inductor",
                    dropped_records=RECORDER.dropped_total - drops_before,
                    warmup_totals_ns=warmup_totals, flops=0,  # not the page faults: compiled
                    core_wait_ns_per_run=counters["core_wait_ns_per_run"],  # rows are charged
                    **meta)                                                 # no first touch
    prof = with_outside(frame, timings, meta, run_noise, device_samples)
    return prof if call is None else with_user_call(prof, call, with_compiled_call)


def compiled_capture(module: torch.nn.Module, settings: CompileSettings, bound: BoundInputs,
                     cache_key: tuple | None) -> InductorCapture:
    """`module` compiled with `settings` and called once on `bound`: the capture kept for
    `cache_key` (run/capture_cache.py) when its graphs serve this call without a recompile,
    else a new one, kept. Reusing it keeps repeated profile() calls from compiling again
    (each compile adds Dynamo cache entries to the model's code: see docs/compiled.md).

    Example:
        >>> from pyfxprof.capture.inductor import compile_settings
        >>> net, bound = torch.nn.Linear(2, 2), BoundInputs((torch.ones(1, 2),))
        >>> first = compiled_capture(*compile_settings(net, True), bound, ("doc",))  # doctest: +SKIP
        >>> compiled_capture(*compile_settings(net, True), bound, ("doc",)) is first  # doctest: +SKIP
        True
    """
    key = None if cache_key is None else ("inductor", repr(settings.config), settings.dynamic,
                                          settings.fullgraph, *cache_key)
    capture = None if key is None else CAPTURES.lookup(module, key)
    if capture is not None:
        compiled_before = len(capture.graphs)
        capture.first_call(bound)  # Dynamo's guards pick the graphs compiled before
        if len(capture.graphs) == compiled_before:
            return capture
    capture = InductorCapture(module, settings)
    capture.first_call(bound)
    if key is not None:
        CAPTURES.keep(module, key, capture)
    return capture


def with_outside(frame: pd.DataFrame, timings: RunTimings, meta: dict,
                  run_noise: np.ndarray | None, device: np.ndarray | None = None) -> Profile:
    """The Profile, its last columns the time between graphs (several graphs) and each run's
    total minus its kernels and that (the outside row); `coverage` stays the kernels' share
    of the run. `device`: the kernels' device ns (runs x kernels), the rows after them 0 on
    the device (their time is host time between kernels)."""
    if timings.intervals.shape[0] == 0:
        raise PyfxprofError("no complete run was recorded; lower runs")
    kernels, totals = timings.intervals, timings.run_totals
    if timings.between_graphs is not None:
        kernels = np.hstack([kernels, timings.between_graphs[:, None]])
    outside = np.maximum(totals - kernels.sum(axis=1), 0)[:, None]
    meta["coverage"] = run_coverage(timings.intervals, totals)
    if timings.between_nodes is not None:
        meta["between_nodes_ns"] = float(np.median(timings.between_nodes))
    if run_noise is not None and (timings.incomplete_runs or len(run_noise) != len(totals)):
        run_noise = None
    samples = np.hstack([kernels, outside]).astype(np.int64)
    if device is not None:
        device = np.hstack([device[:len(totals)], np.zeros((len(totals), samples.shape[1]
                                                             - device.shape[1]), np.int64)])
        frame = add_device_summary(frame, samples, device, totals, meta)
    return Profile(frame, samples, totals, meta, device_samples=device,
                   run_starts=timings.run_starts, run_noise=run_noise)


