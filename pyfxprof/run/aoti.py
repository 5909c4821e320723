"""profile() of an AOTInductor model (torch._inductor.aoti_load_package): its C++ wrapper calls
the kernels with no Python between them, so the model is timed whole, one row, and a note
says so; the eager graph is never put in its place (there is none in the package)."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import torch

from ..capture.shape_run import describe
from ..capture.inductor import CompiledGraph
from ..capture.inputs import split_inputs
from ..capture.provenance import kernels_frame
from ..capture.tracing import Capture
from ..data.profile import Profile
from ..timing.compiled_executor import CompiledExecutor, GraphPlan
from .compiled_profile import outside_row, timed_profile

if TYPE_CHECKING:
    from .arguments import Arguments

#: The capture note of an AOTInductor profile.
AOTI_NOTE = ("AOTInductor model: its C++ wrapper calls every kernel with no Python between "
             "them, so it is timed whole (one row); per-kernel rows need torch.compile "
             "(docs/compiled.md)")


def profile_aoti(given: Arguments) -> Profile:
    """pyfxprof.profile() of an AOTInductor model (``given.model``; `given`: profile()'s
    checked arguments): each call timed whole (a "compiled graph 0" row) plus the time
    around it (the outside row), under inference_mode.

    Example:
        >>> model = torch._inductor.aoti_load_package("model.pt2")   # doctest: +SKIP
        >>> pyfxprof.profile(model, (x,)).nodes["name"].tolist()      # doctest: +SKIP
        ['AOTInductor model', '(outside kernels)']
    """
    model, example_inputs = given.model, given.example_inputs
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
        return timed_profile(executor, frame, args, given,
                             dict(name=given.name or "AOTInductor model",
                                  device=_device(args, kwargs), grad=False,
                                  input_shapes=describe(example_inputs),
                                  captured=Capture(None, "inductor", [AOTI_NOTE])))


def _device(args: tuple, kwargs: dict) -> str:
    """The device of the first tensor input ("cpu" without one)."""
    tensors = [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]
    return str(tensors[0].device) if tensors else "cpu"
