"""profile() of an AOTInductor model (torch._inductor.aoti_load_package): its C++ wrapper calls
the kernels with no Python between them, so the model is timed whole, one row, and a note
says so; the eager graph is never put in its place (there is none in the package)."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any, Callable, cast

import torch

from ..capture.shape_run import describe
from ..capture.inductor import CompiledGraph
from ..capture.inputs import split_inputs
from ..capture.provenance import kernels_frame
from ..capture.tracing import Capture
from ..data.profile import Profile
from ..timing.compiled_executor import CompiledExecutor, GraphPlan
from .compiled_profile import outside_row, timed_profile

#: The capture note of an AOTInductor profile.
AOTI_NOTE = ("AOTInductor model: its C++ wrapper calls every kernel with no Python between "
             "them, so it is timed whole (one row); per-kernel rows need torch.compile "
             "(docs/compiled.md)")


def profile_aoti(model: Any, example_inputs: Any, runs: int, warmup: int | str, *,
                 name: str | None, progress: bool, timed_runs: Callable) -> Profile:
    """pyfxprof.profile() of an AOTInductor model: each call timed whole (a "compiled graph
    0" row) plus the time around it (the outside row), under inference_mode. `timed_runs`
    is run/timed_runs.py's loop of warm-up and timed runs.

    Example:
        >>> model = torch._inductor.aoti_load_package("model.pt2")   # doctest: +SKIP
        >>> profile_aoti(model, (x,), 20, 5, name=None, progress=False,
        ...              timed_runs=timed_runs).nodes["name"].tolist()  # doctest: +SKIP
        ['AOTInductor model', '(outside kernels)']
    """
    args, kwargs = copy.deepcopy(split_inputs(example_inputs))
    graph = SimpleNamespace(index=0, output=SimpleNamespace(current_callable=model))

    def call(*call_args: Any, **call_kwargs: Any) -> Any:
        return graph.output.current_callable(*call_args, **call_kwargs)

    row = {"name": "AOTInductor model", "op": "compiled_graph", "target": type(model).__name__,
           "module_path": "", "module_type": type(model).__name__, "module_stack": (),
           "inputs": (), "communication": False, "source_nodes": (), "source_modules": (),
           "aten_ops": (), "source_lines": (), "graph": 0}
    frame = kernels_frame([row, outside_row(type(model).__name__)])
    # (the namespace stands in for a CompiledGraph: a whole-graph plan reads index and output)
    executor = CompiledExecutor(call, kwargs, [GraphPlan(cast(CompiledGraph, graph), [], [])])
    with torch.inference_mode():
        return timed_profile(model, executor, frame, args, (runs, warmup, progress), timed_runs,
                             dict(name=name or "AOTInductor model", device=_device(args, kwargs),
                                  grad=False, input_shapes=describe(example_inputs),
                                  captured=Capture(None, "inductor", [AOTI_NOTE])))


def _device(args: tuple, kwargs: dict) -> str:
    """The device of the first tensor input ("cpu" without one)."""
    tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
    return str(tensors[0].device) if tensors else "cpu"
