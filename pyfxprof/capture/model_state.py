"""Running a user's model in eval mode and putting back every module's training flag and its
buffer and parameter tensors (the same objects) afterwards."""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import torch

from ..errors import PyfxprofError


@contextlib.contextmanager
def evaluation_mode(model: torch.nn.Module, enabled: bool = True) -> Iterator[None]:
    """Put `model` in eval mode for the block, then restore each submodule's own flag and
    rebind its buffers and parameters to the tensors it had before.

    Example:
        >>> m = torch.nn.Dropout().train()
        >>> with evaluation_mode(m):
        ...     m.training
        False
        >>> m.training
        True
    """
    with _one_thread_at_a_time(model):
        yield from _evaluation_mode(model, enabled)


#: Models inside evaluation_mode: id -> (owning thread, depth).
_ACTIVE: dict[int, tuple[int, int]] = {}
_ACTIVE_LOCK = threading.Lock()


@contextlib.contextmanager
def _one_thread_at_a_time(model: torch.nn.Module) -> Iterator[None]:
    """Refuse a second thread profiling the same model: its flags would be saved in eval
    mode and restored so (the user's train() flag lost). Re-entry from one thread is fine."""
    key, me = id(model), threading.get_ident()
    with _ACTIVE_LOCK:
        owner, depth = _ACTIVE.get(key, (me, 0))
        if owner != me:
            raise PyfxprofError(f"this {type(model).__name__} is already being profiled in "
                                "another thread; profile one model from one thread at a time "
                                "(or profile a copy.deepcopy of it)")
        _ACTIVE[key] = (me, depth + 1)
    try:
        yield
    finally:
        with _ACTIVE_LOCK:
            if depth:
                _ACTIVE[key] = (me, depth)
            else:
                del _ACTIVE[key]


def _evaluation_mode(model: torch.nn.Module, enabled: bool) -> Iterator[None]:
    modules = list(model.modules())
    flags = [(module, module.training) for module in modules]
    # forward may rebind a buffer or parameter (`self.steps = self.steps + 1`), under
    # inference mode to an inference tensor: put back the very tensors the user had.
    tensors = [(module, dict(module._buffers), dict(module._parameters)) for module in modules]
    if enabled:
        model.eval()
    try:
        yield
    finally:
        for module, training in flags:
            module.training = training
        for module, buffers, parameters in tensors:
            module._buffers.clear()
            module._buffers.update(buffers)
            module._parameters.clear()
            module._parameters.update(parameters)


def grad_context(grad: bool) -> contextlib.AbstractContextManager:
    """torch.inference_mode() unless `grad` asks to keep autograd."""
    return contextlib.nullcontext() if grad else torch.inference_mode()
