"""torch.autograd.Functions kept whole on the fx and dynamo rungs: a call of ``Function.apply``
on traced values is one graph node that calls ``apply`` as the model does (forward and the
Function's own backward run as the user runs them), never the tensor ops of its forward traced
through (fx: functions_kept_whole; Dynamo: functions_allowed_in_graph, then named_applies)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
import torch.fx as fx
from torch.fx.node import map_aggregate

_FUNCTION = torch.autograd.function.Function


def _has_proxy(values: Any) -> bool:
    """Whether a Proxy is among `values` (nested lists, tuples and dicts included)."""
    found = []
    map_aggregate(values, lambda v: found.append(v) if isinstance(v, fx.Proxy) else v)
    return bool(found)


def applied(function: type[torch.autograd.Function]) -> Any:
    """The callable a graph node of `function` calls: its own ``apply``, named after it in
    the graph's code and the Profile's target.

    Example:
        >>> class Twice(torch.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x): return 2 * x
        ...     @staticmethod
        ...     def backward(ctx, grad): return 2 * grad
        >>> applied(Twice)(torch.ones(1)).tolist(), applied(Twice).__name__
        ([2.0], 'Twice.apply')
    """
    def apply(*args: Any, **kwargs: Any) -> Any:
        return function.apply(*args, **kwargs)
    apply.__name__ = apply.__qualname__ = f"{function.__name__}.apply"
    apply.__module__ = function.__module__
    return apply


@contextlib.contextmanager
def functions_kept_whole(tracer: fx.Tracer) -> Iterator[None]:
    """While tracing with `tracer`, ``SomeFunction.apply(proxy, ...)`` records one
    call_function node (target: `applied(SomeFunction)`) instead of running the Function's
    forward on proxies; calls on plain values run as before. Restored on exit.

    Example:
        >>> class Twice(torch.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x): return 2 * x
        ...     @staticmethod
        ...     def backward(ctx, grad): return 2 * grad
        >>> tracer = fx.Tracer()
        >>> with functions_kept_whole(tracer):
        ...     graph = tracer.trace(lambda x: Twice.apply(x) + 1)
        >>> [n.target.__name__ for n in graph.nodes if n.op == "call_function"][0]
        'Twice.apply'
    """
    original = _FUNCTION.__dict__["apply"]

    def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
        if _has_proxy((args, kwargs)):
            return tracer.create_proxy("call_function", applied(cls), args, kwargs)
        return original.__get__(None, cls)(*args, **kwargs)

    _FUNCTION.apply = classmethod(apply)
    try:
        yield
    finally:
        _FUNCTION.apply = original


def _user_functions() -> list[type]:
    """Every subclass of torch.autograd.Function defined outside torch (torch's own, such as
    checkpointing's, Dynamo handles in ways of its own)."""
    found, pending = [], list(_FUNCTION.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if not (cls.__module__ or "").startswith("torch"):
            found.append(cls)
    return found


@contextlib.contextmanager
def functions_allowed_in_graph() -> Iterator[None]:
    """While Dynamo captures, each user-defined Function is allowed in its graphs (as
    ``torch.compiler.allow_in_graph`` would): ``SomeFunction.apply(x)`` is one node calling
    ``apply``, whatever autograd mode (without it Dynamo inlines the forward's ops when no
    gradient is needed, and differentiates them when one is). Undone on exit, for the
    Functions it allowed only.

    Example:
        >>> with functions_allowed_in_graph():
        ...     pass
    """
    from torch._dynamo import trace_rules
    allowed = trace_rules._allowed_callable_ids
    added = [cls for cls in _user_functions() if id(cls) not in allowed]
    for cls in added:
        allowed.add(id(cls))
    try:
        yield
    finally:
        for cls in added:
            allowed.remove(id(cls))


def named_applies(gm: fx.GraphModule) -> fx.GraphModule:
    """`gm` with each node Dynamo made for an allowed Function (a call of its
    ``trampoline_autograd_apply``) calling `applied(that Function)` instead: the same call,
    named after the Function in the graph's code, the node's name and the Profile's target;
    recompiled when any changed.

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.ReLU())
        >>> named_applies(gm) is gm
        True
    """
    changed = False
    for node in gm.graph.nodes:
        target = node.target
        if node.op == "call_function" and getattr(target, "_origin", None) is not None \
                and target.__name__ == "trampoline_autograd_apply" and target.__closure__:
            function = target.__closure__[0].cell_contents
            if isinstance(function, type) and issubclass(function, _FUNCTION):
                node.target, changed = applied(function), True
                if node.name.startswith("trampoline_autograd_apply"):
                    node._rename(f"{function.__name__.lower().lstrip('_')}_apply")
    if changed:
        gm.recompile()
    return gm
