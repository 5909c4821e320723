"""Collectives in a captured graph: torch.distributed's collectives as graph nodes, and each
functional collective's wait a node of its own.

``torch.distributed.all_reduce(t)`` (in place, its result unused) reaches torch.fx through
``__torch_function__``, but with a ``ReduceOp`` and a process group among its arguments, which
a graph's generated code cannot spell: the trace failed and the caller became a leaf.
:class:`BoundCollective` binds those constants, so the call is a node of its own
(`bind_constants`, used by the profiling tracer), tagged as communication.

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

#: Module of torch.distributed's collective functions (those reaching a tracer as calls).
C10D_MODULE = "torch.distributed.distributed_c10d"

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


class BoundCollective:
    """A torch.distributed collective with the keyword arguments that hold no traced value
    (op, group, src/dst, async_op...) bound; called with the traced ones. Its ``public_name``
    is what the nodes table shows, ``torch.distributed.all_reduce``; the graph's code refers
    to the object itself.

    Example:
        >>> import torch.distributed as dist
        >>> bound = BoundCollective(dist.all_reduce, {"op": dist.ReduceOp.MAX})
        >>> bound.public_name, bound
        ('torch.distributed.all_reduce', all_reduce(op=RedOpType.MAX))
    """

    def __init__(self, function, constants: dict) -> None:
        self.function, self.constants = function, dict(constants)
        self.__name__ = function.__name__
        self.public_name = f"torch.distributed.{function.__name__}"

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs, **self.constants)

    def __deepcopy__(self, memo):  # immutable, and process groups must not be copied
        return self

    def __repr__(self) -> str:
        bound = ", ".join(f"{key}={_spelled(value)}" for key, value in self.constants.items())
        return f"{self.__name__}({bound})"


def _spelled(value) -> str:
    """``RedOpType.MAX`` for an enum member (pybind enums have no useful repr), else repr."""
    name = getattr(value, "name", None)
    return f"{type(value).__name__}.{name}" if isinstance(name, str) else repr(value)


def bind_constants(target, args: tuple, kwargs: dict) -> tuple:
    """(target, args, kwargs) of a call a tracer records: for a torch.distributed collective,
    a BoundCollective holding the keywords without traced values, and the other keywords;
    any other call unchanged.

    Example:
        >>> import torch.distributed as dist
        >>> target, args, kwargs = bind_constants(dist.broadcast, ("t",), {"src": 0})
        >>> target, args, kwargs
        (broadcast(src=0), ('t',), {})
    """
    if getattr(target, "__module__", None) != C10D_MODULE or not callable(target):
        return target, args, kwargs
    traced = {key: value for key, value in kwargs.items() if _holds_proxy(value)}
    constants = {key: value for key, value in kwargs.items() if key not in traced}
    return BoundCollective(target, constants), args, traced


def _holds_proxy(value) -> bool:
    if isinstance(value, fx.Proxy):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_proxy(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_proxy(item) for item in value.values())
    return False
