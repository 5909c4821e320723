"""Running a user's model in eval mode and putting back every module's training flag and its
buffer and parameter tensors (the same objects) afterwards."""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch


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
