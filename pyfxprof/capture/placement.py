"""Device placement: the model and its inputs on the device the user asked for, the user's
model never moved in place, and the device a model runs on (device_of)."""

from __future__ import annotations

import torch

from ..errors import ArgumentError, PyfxprofError
from .inputs import BoundInputs, map_tensors


def place_on_device(model: torch.nn.Module, example_inputs, device: str | None):
    """(model, inputs) on `device`: a deep copy of the model when it must move (the user's
    model is never moved in place), inputs moved too. None leaves both where they are.

    Example:
        >>> m, x = place_on_device(torch.nn.ReLU(), (torch.zeros(1),), None)
    """
    if device is None:
        return model, example_inputs
    try:
        target = torch.device(device)
    except (RuntimeError, TypeError):
        raise ArgumentError(f"device must be 'cpu', 'cuda' or 'cuda:N' (or None: where the "
                            f"model is), got {device!r}") from None
    if target.type == "meta":
        raise ArgumentError("device 'meta' runs no operations, so there is nothing to time; "
                            "use 'cpu' or 'cuda'")
    if target.type == "cuda" and not torch.cuda.is_available():
        raise PyfxprofError(f"device {device!r} requested but torch sees no CUDA GPU "
                            "(torch.cuda.is_available() is False); use --device cpu")
    parameters = list(model.parameters()) + list(model.buffers())
    if any(p.device != target for p in parameters):
        import copy
        model = copy.deepcopy(model).to(target)
    return model, _move(example_inputs, target)


def _move(value, target: torch.device):
    def moved(tensor: torch.Tensor) -> torch.Tensor:
        return tensor.to(target)
    if isinstance(value, BoundInputs):
        return BoundInputs(map_tensors(value.args, moved), map_tensors(value.kwargs, moved))
    return map_tensors(value, moved)


def device_of(model: torch.nn.Module, args: tuple) -> str:
    """Device of the model's first parameter, else of the first tensor input, else "cpu".

    >>> device_of(torch.nn.Linear(1, 1), ())
    'cpu'
    """
    for tensor in list(model.parameters())[:1] + [a for a in args if isinstance(a, torch.Tensor)]:
        return str(tensor.device)
    return "cpu"
