"""The codegen instrumentation pass: one native mark call at each node boundary, then recompile."""

from __future__ import annotations

import copy
from typing import Callable

import torch.fx as fx

from .. import _C
from ..capture.tracing import timed_nodes


def insert_marks(graph: fx.Graph, first_id: int, mark: Callable[[int], None] = _C.mark) -> int:
    """Insert `mark(first_id + k)` before the k-th timed node and one after the last (n+1 marks).

    Returns the number of timed nodes n. Node k's time is mark k+1 minus mark k. `mark` is
    `_C.mark`, or `_C.mark_cuda` to also record a CUDA event at each boundary.
    """
    nodes = timed_nodes(graph)
    for k, node in enumerate(nodes):
        with graph.inserting_before(node):
            graph.call_function(mark, (first_id + k,))
    if nodes:
        with graph.inserting_after(nodes[-1]):
            graph.call_function(mark, (first_id + len(nodes),))
    graph.lint()
    return len(nodes)


def instrument(gm: fx.GraphModule, first_id: int,
               mark: Callable[[int], None] = _C.mark) -> fx.GraphModule:
    """A new GraphModule running `gm`'s graph with marks between nodes; `gm` is not changed.

    The new module shares `gm`'s submodules and parameters (no weights are copied).

    Example:
        >>> import torch
        >>> gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.ReLU()))
        >>> "mark(" in instrument(gm, 1).code
        True
    """
    graph = copy.deepcopy(gm.graph)
    insert_marks(graph, first_id, mark)
    instrumented = fx.GraphModule(gm, graph, type(gm).__name__)
    instrumented.recompile()
    return instrumented
