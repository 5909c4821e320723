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
    """Replaces ``model.forward`` by ``wrapper(original, args, kwargs)`` until `restore()`.

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
                 wrapper: Callable[[Callable, tuple, dict], Any]) -> None:
        self.model = model
        self._saved = vars(model).get("forward", _MISSING)
        original = model.forward

        @functools.wraps(original)
        def forward(*args, **kwargs):
            return wrapper(original, args, kwargs)

        self.original = original
        self.wrapper = _eager_under_compile(forward)
        vars(model)["forward"] = self.wrapper  # no nn.Module.__setattr__ bookkeeping

    def restore(self) -> None:
        """Put the model's ``forward`` back as it was (idempotent)."""
        if self.wrapper is None:
            return
        if self._saved is _MISSING:
            vars(self.model).pop("forward", None)
        else:
            vars(self.model)["forward"] = self._saved
        self.wrapper = None


def _eager_under_compile(function: Callable) -> Callable:
    """`function` made opaque to TorchDynamo (a compiled caller runs it eagerly, through a
    graph break) when Dynamo is loaded; importing it only for this would cost seconds, and
    without it nothing can be compiled anyway.

    Example:
        >>> _eager_under_compile(len)([1, 2])
        2
    """
    if "torch._dynamo" not in sys.modules:
        return function
    return torch.compiler.disable(function)
