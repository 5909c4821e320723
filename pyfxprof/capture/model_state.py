"""Running a user's model in eval mode and putting every module's training flag back afterwards."""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch


@contextlib.contextmanager
def evaluation_mode(model: torch.nn.Module, enabled: bool = True) -> Iterator[None]:
    """Put `model` in eval mode for the block, then restore each submodule's own flag.

    Example:
        >>> m = torch.nn.Dropout().train()
        >>> with evaluation_mode(m):
        ...     m.training
        False
        >>> m.training
        True
    """
    flags = [(module, module.training) for module in model.modules()]
    if enabled:
        model.eval()
    try:
        yield
    finally:
        for module, training in flags:
            module.training = training


def grad_context(grad: bool) -> contextlib.AbstractContextManager:
    """torch.inference_mode() unless `grad` asks to keep autograd."""
    return contextlib.nullcontext() if grad else torch.inference_mode()
