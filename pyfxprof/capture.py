"""Capturing a model as a torch.fx GraphModule with a profiling tracer (nn and torchvision.ops as leaves)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import torch
import torch.fx as fx

from .errors import PyfxprofError

#: Node ops that get timed; placeholders and the output are not work.
TIMED_OPS = ("call_module", "call_function", "call_method", "get_attr")


class ProfilingTracer(fx.Tracer):
    """torch.fx tracer whose leaves are torch.nn modules, torchvision.ops modules, and any
    module given by type or qualified name in `leaf_modules`.

    Example:
        >>> tracer = ProfilingTracer(leaf_modules=["encoder"])
    """

    def __init__(self, leaf_modules: Iterable = (), autowrap_functions: Iterable = ()) -> None:
        super().__init__(autowrap_functions=tuple(autowrap_functions))
        leaves = list(leaf_modules)
        self.leaf_names = {leaf for leaf in leaves if isinstance(leaf, str)}
        self.leaf_types = tuple(leaf for leaf in leaves if isinstance(leaf, type))

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if module_qualified_name in self.leaf_names or isinstance(m, self.leaf_types):
            return True
        if type(m).__module__.startswith("torchvision.ops"):
            return True
        return super().is_leaf_module(m, module_qualified_name)


@dataclass
class Capture:
    """A captured model: the GraphModule and how it was obtained."""

    graph_module: fx.GraphModule
    mode: str = "fx"
    notes: list[str] = field(default_factory=list)


def capture(model: torch.nn.Module, leaf_modules: Iterable = (), autowrap_functions: Iterable = (),
            concrete_args: dict[str, Any] | None = None) -> Capture:
    """Trace `model` with ProfilingTracer; the model itself is not modified.

    Example:
        >>> capture(torch.nn.Sequential(torch.nn.ReLU())).mode
        'fx'
    """
    if not isinstance(model, torch.nn.Module):
        raise PyfxprofError(f"expected a torch.nn.Module, got {type(model).__name__}")
    if isinstance(model, fx.GraphModule):
        return Capture(model, "fx", ["model is already a GraphModule"])
    tracer = ProfilingTracer(leaf_modules, autowrap_functions)
    try:
        graph = tracer.trace(model, concrete_args=concrete_args)
    except Exception as error:  # any tracing failure becomes a one-line explanation
        raise PyfxprofError(
            f"torch.fx cannot trace {type(model).__name__}: {type(error).__name__}: "
            f"{first_line(error)} — make the failing submodule a leaf (leaf_modules=[...]) "
            f"or pass concrete_args for data-dependent control flow") from None
    name = type(model).__name__
    return Capture(fx.GraphModule(tracer.root, graph, name), "fx", [])


def timed_nodes(graph: fx.Graph) -> list[fx.Node]:
    """The nodes that get timed, in execution order."""
    return [node for node in graph.nodes if node.op in TIMED_OPS]


def first_line(error: BaseException) -> str:
    """The first line of an exception's message (or its type name)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
