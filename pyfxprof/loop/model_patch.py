"""Routing the calls of a model through the Profiler while its block is open: the model
object's own ``forward`` attribute is replaced by a wrapper, and put back exactly on exit.

Code the user does not own (Hugging Face ``generate``, a serving loop) calls ``model(...)``;
``nn.Module.__call__`` looks ``forward`` up on the instance first, so an instance attribute
sees every such call while the module's hooks keep running as usual. A caller compiled with
``torch.compile`` (``generate`` compiles the model on CUDA with a static cache) reaches the
wrapper through a graph break: the call runs eagerly, profiled like any other.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import torch

_MISSING = object()


class ForwardPatch:
    """Replaces ``model.forward`` by ``wrapper(original, args, kwargs)`` until `restore()`;
    with `front` (a native callable with a settable ``general``, such as the Profiler's
    ``_C.HotForward``), by `front`, which takes the calls it can and passes the others to the
    wrapper (as ``general``).

    The wrapper keeps the original's name, docstring and signature (``inspect.signature``
    follows ``__wrapped__``), which libraries read to decide which arguments to pass. A
    ``forward`` the instance already had (set by accelerate or by the user) is kept and
    restored; a model without one gets none back.

    Example:
        >>> relu = torch.nn.ReLU()
        >>> patch = ForwardPatch(relu, lambda forward, args, kwargs: forward(*args) + 1)
        >>> relu(torch.zeros(1)).item()
        1.0
        >>> patch.restore(); relu(torch.zeros(1)).item(), "forward" in vars(relu)
        (0.0, False)
    """

    def __init__(self, model: torch.nn.Module,
                 wrapper: Callable[[Callable, tuple, dict], Any], front: Any = None) -> None:
        self.model = model
        self._saved = vars(model).get("forward", _MISSING)
        original = model.forward

        compiling, eager = _compiled_callers(wrapper)

        @functools.wraps(original)
        def forward(*args, **kwargs):
            if compiling() is None:  # no compiled caller around: straight to the wrapper
                return wrapper(original, args, kwargs)
            return eager(original, args, kwargs)

        #: Whether Dynamo may trace the wrapper: it was not loaded when the wrapper was made
        #: (so not told to skip it), and a compiled caller made later reaches `wrapper`
        #: through it (the wrapper must then ask torch.compiler.is_compiling()).
        self.traceable = "torch._dynamo" not in sys.modules
        self.original = original
        self.wrapper: Callable | None = _skipped_by_dynamo(forward)  # None once restored
        installed = self.wrapper
        if front is not None:  # a native callable taking some calls itself, the rest to wrapper
            front.general = self.wrapper
            installed = functools.update_wrapper(front, original)
        vars(model)["forward"] = installed  # no nn.Module.__setattr__ bookkeeping

    def restore(self) -> None:
        """Put the model's ``forward`` back as it was (idempotent)."""
        if self.wrapper is None:
            return
        if self._saved is _MISSING:
            vars(self.model).pop("forward", None)
        else:
            vars(self.model)["forward"] = self._saved
        self.wrapper = None


def _no_callback() -> None:
    return None


def _compiled_callers(wrapper: Callable) -> tuple[Callable[[], Any], Callable]:
    """(Dynamo's current eval-frame callback getter: None outside compiled code, `wrapper`
    made opaque to Dynamo) when Dynamo is loaded; importing it only for this would cost
    seconds, and without it nothing can be compiled anyway.

    A compiled caller (its callback set) must reach `wrapper` through ``torch.compiler
    .disable``, which turns the callback off for the frames below, so the Profiler's code
    and the instrumented graph run eagerly; elsewhere the disable wrapper is skipped (it
    cost 0.8-1.1 µs per call on the 2-core VM, benchmarks/README.md).

    Example:
        >>> compiling, eager = _compiled_callers(lambda f, a, k: f(*a))
        >>> compiling() is None, eager(len, ([1, 2],), {})
        (True, 2)
    """
    if "torch._dynamo" not in sys.modules:
        return _no_callback, wrapper
    from torch._C._dynamo.eval_frame import get_eval_frame_callback
    return get_eval_frame_callback, torch.compiler.disable(wrapper)


def _skipped_by_dynamo(function: Callable) -> Callable:
    """`function`, whose frame Dynamo does not trace: a compiled caller graph-breaks at
    it and calls it (when Dynamo is loaded).

    Example:
        >>> _skipped_by_dynamo(len)([1, 2])
        2
    """
    if "torch._dynamo" not in sys.modules or not hasattr(function, "__code__"):
        return function
    from torch._dynamo.decorators import skip
    return skip(function)
