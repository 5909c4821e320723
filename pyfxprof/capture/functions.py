"""torch.autograd.Functions kept whole by the fx tracer: a call of ``Function.apply`` on traced
values is one graph node that calls ``apply`` as the model does (forward and the Function's own
backward run as the user runs them), never the tensor ops of its forward traced through."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
import torch.fx as fx

_FUNCTION = torch.autograd.function.Function


def _has_proxy(values: Any) -> bool:
    """Whether a Proxy is among `values` (nested lists, tuples and dicts included)."""
    found = []
    fx.node.map_aggregate(values, lambda v: found.append(v) if isinstance(v, fx.Proxy) else v)
    return bool(found)


def applied(function: type) -> Any:
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
