"""`pyfxprof.profile`: capture, analyse (untimed), instrument, calibrate, run, and build a Profile."""

from __future__ import annotations

import inspect
import time
from typing import Any, Iterable

import numpy as np
import pandas as pd
import torch
import torch.fx as fx

from .analysis import analyse, describe
from .capture import capture, timed_nodes
from .errors import PyfxprofError
from .executors import MODES, make_executor
from .metadata import environment_meta
from .model_state import evaluation_mode, grad_context
from .node_table import nodes_frame
from .profile import Profile
from .progress import Progress
from .recorder import RECORDER
from .timing import RunTimings


def profile(model: torch.nn.Module, example_inputs: Any = (), runs: int = 50, warmup: int = 10,
            mode: str = "codegen", *, grad: bool = False, name: str | None = None,
            leaf_modules: Iterable = (), autowrap_functions: Iterable = (),
            concrete_args: dict | None = None, progress: bool = True) -> Profile:
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

    Example:
        >>> prof = profile(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()),
        ...                (torch.randn(4, 8),), runs=5, warmup=1)
        >>> prof.n_nodes, prof.n_runs
        (2, 5)
    """
    _check_arguments(model, runs, warmup, mode)
    with evaluation_mode(model), grad_context(grad):
        captured = capture(model, leaf_modules, autowrap_functions, concrete_args)
        gm = captured.graph_module
        nodes = timed_nodes(gm.graph)
        if not nodes:
            raise PyfxprofError(f"{type(model).__name__} has no operations to time "
                                "(its graph only passes inputs through)")
        args = positional_inputs(gm, example_inputs)
        _, shapes = analyse(gm, args)
        executor = make_executor(mode, gm, len(nodes))
        timings = _timed_runs(executor, args, runs, warmup, progress)
    frame = _nodes_with_shapes(nodes_frame(nodes, gm), shapes)
    meta = {"model": name or type(model).__name__, "device": _device_of(model, args),
            "runs": int(timings.intervals.shape[0]), "warmup": warmup, "mode": mode,
            "capture_mode": captured.mode, "capture_notes": captured.notes, "grad": grad,
            "input_shapes": describe(args), "incomplete_runs": timings.incomplete_runs,
            "dropped_records": RECORDER.dropped_total, **executor.calibration.as_meta(),
            **_fusion_meta(model), **environment_meta()}
    return _build_profile(frame, timings, executor.marks_per_run, meta)


def _fusion_meta(model: torch.nn.Module) -> dict:
    """`fused_pairs` for models made by pyfxprof.fuse_conv_bn, so diffs show BNs as fused."""
    report = getattr(model, "fusion_report", None)
    return {"fused_pairs": [list(pair) for pair in report.fused]} if report is not None else {}


def _check_arguments(model: Any, runs: int, warmup: int, mode: str) -> None:
    if not isinstance(model, torch.nn.Module):
        raise PyfxprofError(f"expected a torch.nn.Module to profile, got {type(model).__name__}")
    if mode not in MODES:
        raise PyfxprofError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not isinstance(runs, int) or runs < 1:
        raise PyfxprofError(f"runs must be a positive integer, got {runs!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise PyfxprofError(f"warmup must be a non-negative integer, got {warmup!r}")


def positional_inputs(gm: fx.GraphModule, example_inputs: Any) -> tuple:
    """`example_inputs` (tuple, list, dict of keyword arguments, or one value) as a tuple in
    the order of the graph's placeholders.

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.Linear(2, 2))
        >>> len(positional_inputs(gm, {"input": torch.zeros(1, 2)}))
        1
    """
    if isinstance(example_inputs, dict):
        signature = inspect.signature(gm.forward)
        try:
            bound = signature.bind(**example_inputs)
        except TypeError as error:
            raise PyfxprofError(f"keyword inputs do not match forward{signature}: {error}") from None
        bound.apply_defaults()
        return tuple(bound.arguments.values())
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs)
    return (example_inputs,)


def _timed_runs(executor, args: tuple, runs: int, warmup: int, progress: bool) -> RunTimings:
    started = time.perf_counter()
    for _ in range(warmup):
        executor.run(args)
    per_run = (time.perf_counter() - started) / warmup if warmup else 0.0
    executor.reset()
    bar = Progress(runs, "profiling", per_run * runs if progress else 0.0)
    for done in range(1, runs + 1):
        executor.run(args)
        bar.update(done)
    bar.close()
    return executor.timings()


def _nodes_with_shapes(frame: pd.DataFrame, shapes: dict) -> pd.DataFrame:
    for column in ("input_shapes", "output_shapes"):
        frame[column] = [shapes.get(name, {}).get(column, "") for name in frame["name"]]
    frame["out_bytes"] = np.array([shapes.get(n, {}).get("out_bytes", 0) for n in frame["name"]],
                                  dtype=np.int64)
    return frame


def _device_of(model: torch.nn.Module, args: tuple) -> str:
    for tensor in list(model.parameters())[:1] + [a for a in args if isinstance(a, torch.Tensor)]:
        return str(tensor.device)
    return "cpu"


def _build_profile(frame: pd.DataFrame, timings: RunTimings, marks_per_run: int,
                   meta: dict) -> Profile:
    if timings.intervals.shape[0] == 0:
        raise PyfxprofError("no complete run was recorded (the record buffer dropped "
                            f"{meta['dropped_records']} records); raise the buffer cap or "
                            "lower runs")
    overhead = meta["overhead_ns"]
    samples = np.clip(np.rint(timings.intervals - overhead), 0, None).astype(np.int64)
    totals = np.clip(np.rint(timings.run_totals - marks_per_run * overhead), 0, None)
    totals = totals.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = samples.sum(axis=1) / totals
    meta["coverage"] = float(np.median(shares)) if np.isfinite(shares).all() else 1.0
    return Profile(frame, samples, totals, meta, run_starts=timings.run_starts)
