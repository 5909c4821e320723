"""The capture ladder: from the most detailed capture to the coarsest, the first that works on the
inputs wins, and the notes say which rung won and why each rung above it failed.

    fx  →  dynamo  →  fx+leaf  →  hooks  →  whole

Every rung is tried with its untimed analysis run (shapes, FLOPs, bytes) on copies of the
inputs, so a graph that captures but fails on the inputs also goes one rung down, and the
caller's tensors and caches are never run on.
"""

from __future__ import annotations

import contextlib
import functools
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
import pandas as pd
import torch
import torch.fx as fx

from ..errors import ArgumentError, PyfxprofError, first_line
from .shape_run import analyse
from .collectives import with_explicit_waits
from .dynamo import GRANULARITIES, check_granularity
from .dynamo_frame import DynamoFrame, LiveCall, frame_capture, graphs_capture
from .live_capture import LiveCapture
from .exported import check_exported_inputs, is_exported
from .hook_analysis import HookAnalysis, analyse_hooks
from .inputs import BoundInputs, copied_bound, copied_inputs
from .memory import ALLOCATOR_COLUMNS
from .model_state import forked_rng
from .node_table import between_graphs_row, module_calls_frame, nodes_frame
from .source import missing_source_notes
from ..data.rungs import CAPTURE_MODES, DYNAMO, EXPORTED, FX, FX_LEAF, HOOKS, RUNG, RUNGS, WHOLE
from .tracing import (Capture, CaptureFallbackWarning, capture, fallback_capture, leaf_trace,
                      timed_nodes)

#: A node whose module holds at least this share of the model's parameters makes a capture
#: too coarse to be useful (its inside is one number).
COARSE_SHARE = 0.5


@dataclass
class Prepared:
    """A captured model after its untimed analysis run, ready to be timed."""

    captured: Capture
    args: tuple                           # the graph's (or, hooks: the model's) positional inputs
    frame: pd.DataFrame                   # the nodes table, with the analysis columns
    flops: int                            # FLOPs of the nodes (the sum of the flops column)
    analysis: HookAnalysis | None = None  # hooks and whole captures only
    memory_meta: dict = field(default_factory=dict)  # the CUDA peak, when measured
    kwargs: dict = field(default_factory=dict)  # keywords of each call (hooks and whole only)
    analysis_s: float | None = None       # the analysis run's wall seconds (graph captures)


class _RungFailed(Exception):
    """One rung of the ladder did not work: `note` for the ladder, `message` (default: the
    note) when the rung was forced."""

    def __init__(self, note: str, message: str | None = None) -> None:
        super().__init__(note)
        self.message = message or note


def check_model(model) -> None:
    """ArgumentError for what cannot be profiled: not an nn.Module, or a TorchScript module.

    >>> check_model(None)
    Traceback (most recent call last):
    ...
    pyfxprof.errors.ArgumentError: expected a torch.nn.Module to profile, got NoneType
    """
    if not isinstance(model, torch.nn.Module):
        raise ArgumentError(f"expected a torch.nn.Module to profile, got {type(model).__name__}")
    if isinstance(model, torch.jit.ScriptModule):
        raise ArgumentError("model is a TorchScript module (torch.jit.script / torch.jit.trace), "
                            "which torch.fx cannot see into; profile the original nn.Module")


def _check_tracer_options(model, leaf_modules, autowrap_functions, concrete_args) -> None:
    """ArgumentError for a model check_model refuses or tracer options of the wrong kind."""
    check_model(model)
    for name, value in (("leaf_modules", leaf_modules), ("autowrap_functions", autowrap_functions)):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
            raise ArgumentError(f"{name} must be a list or tuple (empty for none), got "
                                f"{type(value).__name__}")
    if concrete_args is not None and not isinstance(concrete_args, dict):
        raise ArgumentError(f"concrete_args must be a dict or None, got "
                            f"{type(concrete_args).__name__}")


def prepare(model: torch.nn.Module, example_inputs: Any, capture_mode: str = "auto",
            tracer_options: tuple = ((), (), None), granularity: str = "function",
            exact_outputs: LiveCall | None = None) -> Prepared:
    """Capture `model` for calls on `example_inputs` (tuple, dict of keywords, BoundInputs or
    one value) and run the untimed analysis on copies of them.

    `capture_mode` "auto" walks the ladder; "fx", "dynamo", "hooks", "whole" force one rung
    (a failure is a one-line PyfxprofError). `tracer_options` is (leaf_modules,
    autowrap_functions, concrete_args). `granularity` "function" or "aten" (the dynamo rung;
    "aten" skips the fx rung). `exact_outputs`: the caller hands the model's real outputs
    back, from calls made as this LiveCall says; the dynamo rung then keeps the code
    Dynamo generates around its graph (capture/dynamo_frame.py), whose calls give exactly
    the model's outputs and side effects, captured with the live calls' training flags.

    Example:
        >>> p = prepare(torch.nn.Sequential(torch.nn.ReLU()), (torch.zeros(2),))
        >>> p.captured.mode, p.frame["output_shapes"].tolist()
        ('fx', ['[2] float32'])
    """
    if capture_mode not in CAPTURE_MODES:
        raise PyfxprofError(f"capture must be one of {', '.join(CAPTURE_MODES)}, "
                            f"got {capture_mode!r}")
    check_granularity(granularity)
    _check_tracer_options(model, *tracer_options)
    bound = copied_inputs(model, example_inputs)
    rungs = (_exported_rungs(capture_mode) if is_exported(model)
             else _rungs(capture_mode, granularity, exact_outputs))
    notes: list[str] = []
    for name, rung in rungs:
        try:
            prepared = rung(model, bound, tracer_options, granularity)
        except _RungFailed as failure:
            if len(rungs) == 1:
                raise PyfxprofError(failure.message) from None
            notes.append(f"{name}: {failure}")
            continue
        prepared.captured.notes[:0] = notes
        prepared.captured.notes.extend(coarse_notes(model, prepared.frame))
        prepared.captured.notes.extend(missing_source_notes(prepared.frame["source"]))
        return prepared
    raise PyfxprofError("; ".join(notes))  # unreachable: the whole rung always works


def _rungs(capture_mode: str, granularity: str, exact_outputs: LiveCall | None) -> list[tuple]:
    dynamo = _dynamo_rung if exact_outputs is None else functools.partial(_frame_rung,
                                                                          exact_outputs)
    rungs = {FX: _fx_rung, DYNAMO: dynamo, FX_LEAF: _leaf_rung, HOOKS: _hooks_rung,
             WHOLE: _whole_rung}
    if capture_mode != "auto":
        return [(capture_mode, rungs[capture_mode])]
    names = [name for name in RUNGS if not (granularity == "aten" and name == FX)]
    return [(name, rungs[name]) for name in names]


def _exported_rungs(capture_mode: str) -> list[tuple]:
    """An exported program's capture path: its own graph as it is ("auto", or "fx": the graph
    is already one), or the whole call ("whole"); other rungs would retrace a flat graph."""
    if capture_mode in ("auto", FX):
        return [(EXPORTED, _exported_rung)]
    if capture_mode == WHOLE:
        return [(WHOLE, _whole_rung)]
    raise PyfxprofError(f"capture={capture_mode!r} does not apply to an exported program, "
                        "whose graph is timed as it is: use capture='auto' (or 'whole')")


def _exported_rung(model, bound: BoundInputs, _tracer_options, _granularity) -> Prepared:
    """The program's own graph, timed as it is (no retrace)."""
    check_exported_inputs(model, bound)
    captured = Capture(model, EXPORTED, ["exported: the program's aten graph, timed as it is"])
    return _graph_prepared(model, captured, bound)


def _graph_prepared(model: torch.nn.Module, captured: Capture, bound: BoundInputs) -> Prepared:
    """The analysis run of a graph capture on `bound`; `_RungFailed` when it fails. A graph
    with functional collectives gets their waits as nodes of their own first."""
    traced = captured.graph_module = with_explicit_waits(captured.graph_module_or_raise())
    nodes = timed_nodes(traced.graph)
    if not nodes:
        raise PyfxprofError(f"{type(model).__name__} has no operations to time "
                            "(its graph only passes inputs through)")
    started = time.perf_counter()
    try:
        args, info = (_graph_analysis if captured.frame is None else _frame_analysis)(
            captured, bound)
    except PyfxprofError as error:
        if captured.frame is not None or not _runs_eagerly(model, bound):
            raise
        raise _RungFailed(f"the graph fails where the model runs ({error})") from None
    infos = [info.get(node.name, {}) for node in nodes]
    frame = with_analysis_columns(nodes_frame(nodes, traced), infos)
    return Prepared(captured, args, frame, _total_flops(frame),
                    memory_meta=_model_peak_meta(infos),
                    analysis_s=time.perf_counter() - started)


def _total_flops(frame: pd.DataFrame) -> int:
    """The FLOPs of all the rows of a nodes table."""
    # (pandas-stubs type a column's sum as a scalar or a Series)
    return int(frame["flops"].sum())  # pyright: ignore[reportArgumentType]


def _graph_analysis(captured: Capture, bound: BoundInputs) -> tuple[tuple, dict]:
    """(the graph's inputs for `bound`, the analysis run's per-node info)."""
    try:
        args = captured.graph_args(bound.args, bound.kwargs)
    except PyfxprofError as error:
        raise _RungFailed(str(error)) from None
    return args, analyse(captured.graph_module_or_raise(), args)[1]


def _frame_analysis(captured: Capture, bound: BoundInputs) -> tuple[tuple, dict]:
    """The analysis run of a DynamoFrame's graph, called by Dynamo's code on a copy of
    `bound`: (the graph's flat inputs, the per-node info)."""
    seen: dict = {}

    def analysed(flat: tuple) -> Any:
        seen["args"] = flat
        output, seen["info"] = analyse(captured.graph_module_or_raise(), flat)
        return output

    captured.frame.run_graph_with(analysed)
    try:
        captured.frame.call(copied_bound(bound))
    except PyfxprofError:
        raise
    except Exception as error:  # Dynamo's code around the graph failed on the copies
        raise PyfxprofError(f"{type(error).__name__}: {first_line(error)}") from None
    return seen["args"], seen["info"]


def _fx_rung(model, bound: BoundInputs, tracer_options: tuple, _granularity) -> Prepared:
    try:
        leaves, autowrap, concrete_args = tracer_options
        captured = capture(model, leaves, autowrap, concrete_args, mode=FX)
    except PyfxprofError as error:
        raise _RungFailed(str(error).split(" — ")[0], str(error)) from None
    return _graph_prepared(model, captured, bound)


def _dynamo_rung(model, bound: BoundInputs, _tracer_options, granularity: str) -> Prepared:
    try:
        found = graphs_capture(model, bound, granularity)
    except PyfxprofError as error:
        raise _RungFailed(str(error)) from None
    if isinstance(found, DynamoFrame):
        return _graphs_prepared(model, found, bound, granularity)
    graph, graph_inputs = found
    captured = Capture(graph, DYNAMO, [f"dynamo: one graph at {granularity} level"],
                       graph_inputs=graph_inputs)
    return _graph_prepared(model, captured, bound)


def _graphs_prepared(model: torch.nn.Module, frame: DynamoFrame, bound: BoundInputs,
                     granularity: str, live: bool = False) -> Prepared:
    """The analysis run of a call Dynamo split (graph breaks), made by Dynamo's code on a
    copy of `bound`: its nodes graph after graph (a ``graph`` column says which), then the
    BETWEEN_GRAPHS row when there are several graphs. The calls run as given (`args`,
    `kwargs`); a model in training mode is refused (the graphs are run in eval mode only),
    unless `live` (a live capture: its graphs hold the call's own flags)."""
    if not live and any(module.training for module in model.modules()):
        raise _RungFailed(f"graph breaks ({'; '.join(frame.breaks[:2])}): several Dynamo "
                          "graphs are timed in eval mode only")
    info = _graphs_analysis(frame, bound)
    runs = [frame.order.count(k) for k in range(len(frame.graphs))]
    parts = [nodes_frame(timed_nodes(gm.graph), gm).assign(graph=k, calls=runs[k])
             for k, gm in enumerate(frame.graphs)]
    rows = pd.concat(parts, ignore_index=True)
    rows["index"] = range(len(rows))
    nodes = [node for gm in frame.graphs for node in timed_nodes(gm.graph)]
    if len(frame.graphs) > 1:
        between = between_graphs_row(len(rows), type(model).__name__)
        gaps = len(frame.order) - 1  # the Python between graphs runs once between each two
        rows = pd.concat([rows, pd.DataFrame([{**between, "graph": -1, "calls": gaps}])],
                         ignore_index=True)
    infos = [info.get(frame.origins.get(node.name, node.name), {}) for node in nodes] + \
        [{}] * (len(rows) - len(nodes))
    frame_rows = with_analysis_columns(rows, infos)
    frame_rows["flops"] *= frame_rows["calls"]  # per call, as the times are
    breaks = "; ".join(frame.breaks) or "none reported"
    captured = Capture(None, DYNAMO, [f"dynamo: {len(frame.graphs)} graphs at {granularity} "
                                        f"level (graph breaks: {breaks})"], frame=frame)
    return Prepared(captured, bound.args, frame_rows, _total_flops(frame_rows),
                    kwargs=bound.kwargs, memory_meta=_model_peak_meta(infos))


def _graphs_analysis(frame: DynamoFrame, bound: BoundInputs) -> dict:
    """The per-node info of the analysis run of the graphs of `frame`, called by Dynamo's
    code on a copy of `bound`; the frame keeps the graphs that run, in the order they ran
    (DynamoFrame.keep: a graph Dynamo compiled for the first call only, such as code that
    fills a cache, is left out; a graph a loop runs several times is kept once, its runs in
    the frame's `order`). `_RungFailed` when no graph runs."""
    info: dict = {}
    order: list[int] = []
    for graph, gm in enumerate(frame.graphs):
        def analysed(flat: tuple, graph: int = graph, gm: fx.GraphModule = gm) -> Any:
            order.append(graph)
            output, found = analyse(gm, flat)
            info.update(found)
            return output
        frame.run_graph_with(analysed, graph)
    try:
        with frame.locating():  # the module instance of each graph run (DynamoFrame.keep)
            frame.call(copied_bound(bound))
    except Exception as error:  # Dynamo's code around the graphs failed on the copies
        raise _RungFailed(f"Dynamo's code fails on the inputs ({type(error).__name__}: "
                          f"{first_line(error)})") from None
    if not order:
        raise _RungFailed("no graph ran in one call")
    frame.keep(order)
    return info


def _frame_rung(live: LiveCall, model, bound: BoundInputs, _tracer_options,
                granularity: str) -> Prepared:
    if granularity != "function":
        raise _RungFailed("aten granularity: the loop times Dynamo graphs at function level "
                          "only")
    if live.refused:
        raise _RungFailed(live.refused)
    with _as_called(live, model):
        try:
            graph, frame = frame_capture(live, bound, type(model).__name__)
        except PyfxprofError as error:
            raise _RungFailed(str(error)) from None
        if graph is None:  # a call Dynamo split: Dynamo's code runs (and guards) its
            with live.mode():  # frames in the live calls' autograd mode
                return _graphs_prepared(model, frame, bound, granularity)
        captured = Capture(graph, DYNAMO, ["dynamo: one graph at function level, the "
                                             "model's own outputs rebuilt by Dynamo's code"],
                           frame=frame)
        return _graph_prepared(model, captured, bound)


def live_prepared(model: torch.nn.Module, found: LiveCapture, bound: BoundInputs) -> Prepared:
    """The Prepared of a live capture (capture/live_capture.py, which made the caller's
    call `bound`): its analysis replays the call's graph runs on copies of their inputs, so
    none of the model's Python runs again. A one-line PyfxprofError when there is no graph
    to time (its `note`) or the analysis fails."""
    if found.frame is None:
        raise PyfxprofError(found.note)
    try:
        if found.graph is None:  # several graphs: Dynamo's code runs them and the Python
            prepared = _graphs_prepared(model, found.frame, bound, "function", live=True)
        else:
            captured = Capture(found.graph, DYNAMO, ["dynamo: one graph at function level, "
                                                     "the model's own outputs and side "
                                                     "effects made by Dynamo's code"],
                               frame=found.frame)
            prepared = _graph_prepared(model, captured, bound)
    except _RungFailed as failure:
        raise PyfxprofError(failure.message) from None
    prepared.captured.notes.extend(coarse_notes(model, prepared.frame))
    prepared.captured.notes.extend(missing_source_notes(prepared.frame["source"]))
    return prepared


@contextlib.contextmanager
def _as_called(live: LiveCall, model: torch.nn.Module) -> Iterator[None]:
    """Each module's training flag as the live calls have it (the caller holds the model in
    eval mode for the analysis; Dynamo bakes the flags into the graph, e.g. dropout's), and
    the random state restored after: in training mode the capture and analysis runs draw
    dropout masks, which the user's own calls must draw as if unprofiled."""
    modules = list(model.modules())
    held = [module.training for module in modules]
    try:
        for module, flag in zip(modules, live.flags):
            module.training = flag
        with forked_rng(model):
            yield
    finally:
        for module, flag in zip(modules, held):
            module.training = flag


def _leaf_rung(model, bound: BoundInputs, tracer_options: tuple, _granularity) -> Prepared:
    leaves, autowrap, concrete_args = tracer_options
    try:
        captured = leaf_trace(model, list(leaves), tuple(autowrap), concrete_args)
    except PyfxprofError as error:
        raise _RungFailed(str(error)) from None
    if captured.mode == FX:  # traces with the user's leaves alone: the fx rung's failure
        raise _RungFailed("no submodule to make a leaf")
    return _graph_prepared(model, captured, bound)


def _hooks_rung(model, bound: BoundInputs, tracer_options: tuple, _granularity) -> Prepared:
    return hooks_prepared(model, fallback_capture(model, tracer_options[0], []), bound)


def _whole_rung(model, bound: BoundInputs, tracer_options: tuple, _granularity) -> Prepared:
    return hooks_prepared(model, fallback_capture(model, (), [], whole=True), bound)


def hooks_prepared(model: torch.nn.Module, captured: Capture, bound: BoundInputs) -> Prepared:
    """The analysis run of a hooks (or whole) capture; the whole model when no hooked module
    ran. FLOPs run outside every hooked call are on no row: a note says how many.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.ReLU())
        >>> hooks_prepared(model, fallback_capture(model, (), []),
        ...                BoundInputs((torch.zeros(1),))).captured.mode
        'hooks'
    """
    analysis = analyse_hooks(model, captured.leaves, bound.args, bound.kwargs)
    if not analysis.calls and captured.mode != WHOLE:
        note = f"no hooked module of {type(model).__name__} ran — timing it whole"
        captured = Capture(None, WHOLE, captured.notes + [note], [("", model)])
        analysis = analyse_hooks(model, captured.leaves, bound.args, bound.kwargs)
    calls = [(captured.leaves[k][0], type(captured.leaves[k][1]).__name__) for k in analysis.calls]
    frame = with_analysis_columns(module_calls_frame(calls, type(model).__name__), analysis.info)
    flops = _total_flops(frame)
    if analysis.flops > flops:
        captured.notes.append(f"{analysis.flops - flops} FLOPs ran outside the hooked modules "
                              "(on no row, not in the total)")
    return Prepared(captured, bound.args, frame, flops, analysis, kwargs=bound.kwargs)


def _runs_eagerly(model: torch.nn.Module, bound: BoundInputs) -> bool:
    try:
        copied_bound(bound).call(model)
    except Exception:  # the inputs do not fit the model itself: report the graph's error
        return False
    return True


def coarse_notes(model: torch.nn.Module, frame: pd.DataFrame) -> list[str]:
    """A note per node whose module (with submodules of its own) holds at least COARSE_SHARE
    of the model's parameters: the capture cannot say what inside it is slow.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(4, 4)))
        >>> frame = pd.DataFrame({"op": ["call_module"], "module_path": ["0"], "name": ["0"]})
        >>> coarse_notes(model, frame)[0].split(":")[0]
        'coarse capture'
    """
    total = sum(p.numel() for p in model.parameters())
    notes = []
    for name, path in frame.loc[frame["op"] == "call_module", ["name", "module_path"]].values:
        module = model.get_submodule(path) if path else model
        share = sum(p.numel() for p in module.parameters()) / total if total else 0.0
        if share >= COARSE_SHARE and any(True for _ in module.children()):
            notes.append(f"coarse capture: node {name} ({type(module).__name__}) holds "
                         f"{share:.0%} of the parameters, its inside is not timed node by node")
    return notes


def warn_fallback(captured: Capture, capture_mode: str) -> None:
    """One warning when "auto" capture could not use a plain FX trace or dynamo graph, or
    when the capture is coarse, saying what it did."""
    coarse = any(note.startswith("coarse capture") for note in captured.notes)
    plain = RUNG[captured.mode].plain
    if coarse or (capture_mode == "auto" and not plain):
        warnings.warn(f"pyfxprof: {'; '.join(captured.notes)} (capture mode "
                      f"{captured.mode!r})", CaptureFallbackWarning, stacklevel=3)


def with_analysis_columns(frame: pd.DataFrame, infos: list[dict]) -> pd.DataFrame:
    """`frame` plus the analysis columns: input_shapes, output_shapes, out_bytes, flops, and
    the source lines and memory figures of a hooks capture's calls and the roofline's
    columns (capture.shape_run) when measured."""
    for column in ("input_shapes", "output_shapes"):
        frame[column] = [info.get(column, "") for info in infos]
    for column, empty in (("source", ""), ("source_stack", ())):
        if any(column in info for info in infos):
            frame[column] = pd.Series([info.get(column, empty) for info in infos], dtype=object)
    for column in ("out_bytes", "flops"):
        frame[column] = np.array([info.get(column, 0) for info in infos], dtype=np.int64)
    blanks: dict[str, object] = {"call_args": "", "unknown_ops": "", "bytes_by_dtype": "",
                                 "dtype": "", "aliases_input": False}  # when measured
    for column, blank in blanks.items():
        if any(column in info for info in infos):
            frame[column] = [info.get(column, blank) for info in infos]
    for column in ("alloc_delta_bytes", "peak_bytes", "vector_flops", "in_bytes",
                   "param_bytes", "fresh_out_bytes", "fresh_out_largest") + ALLOCATOR_COLUMNS:  # when measured
        if any(column in info for info in infos):
            frame[column] = np.array([info.get(column, 0) for info in infos], dtype=np.int64)
    return frame


def _model_peak_meta(infos: list[dict]) -> dict:
    """The CUDA allocator's peak over the analysis run, when it was measured."""
    peaks = [info["model_peak_bytes"] for info in infos if "model_peak_bytes" in info]
    return {"cuda_peak_bytes": int(max(peaks))} if peaks else {}
