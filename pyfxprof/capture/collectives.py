"""Collectives in a captured graph: make each functional collective's wait a node of its own.

A functional collective (``torch.distributed._functional_collectives.all_reduce`` and kin)
returns at once; the wait for the other ranks happens inside whichever operation first reads
the result, so that node would carry the time spent waiting for a slow rank. An explicit
``wait_tensor`` node right after the collective (what eager mode does lazily) puts that time
where it belongs: in a communication node. The user's graph is never edited: a graph that
needs waits is copied first.
"""

from __future__ import annotations

import copy as copy_module

import torch
import torch.fx as fx

from .node_table import target_name

#: Functional collectives returning one tensor that must be waited on before use.
ASYNC_COLLECTIVES = frozenset(
    f"torch.ops._c10d_functional.{name}" for name in (
        "all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single",
        "broadcast", "all_reduce.default", "all_gather_into_tensor.default",
        "reduce_scatter_tensor.default", "all_to_all_single.default", "broadcast.default"))
_WAIT = "torch.ops._c10d_functional.wait_tensor"


def _needs_wait(node: fx.Node) -> bool:
    return (node.op == "call_function" and target_name(node) in ASYNC_COLLECTIVES
            and not any(target_name(user).startswith(_WAIT) for user in node.users))


def with_explicit_waits(gm: fx.GraphModule) -> fx.GraphModule:
    """``gm`` itself when no functional collective lacks its wait, else a copy (sharing the
    submodules and parameters) with a ``wait_tensor`` node after each such collective.

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.ReLU())
        >>> with_explicit_waits(gm) is gm
        True
    """
    if not any(_needs_wait(node) for node in gm.graph.nodes):
        return gm
    copy = fx.GraphModule(gm, copy_module.deepcopy(gm.graph))  # node.meta comes along
    for node in list(copy.graph.nodes):
        if _needs_wait(node):
            with copy.graph.inserting_after(node):
                wait = copy.graph.call_function(torch.ops._c10d_functional.wait_tensor.default,
                                                (node,))
            node.replace_all_uses_with(wait, delete_user_cb=lambda user: user is not wait)
    copy.graph.lint()
    copy.recompile()
    return copy
