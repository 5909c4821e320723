"""Which storages a run of a graph writes, whatever the path: an aten op's mutable arguments
(``add_``, ``copy_``, ``out=``) seen under a dispatch mode, so a write through ``.data``, a
view or ``set_`` counts too (those bump no version counter of the tensor a caller holds)."""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode


def storage_key(tensor: torch.Tensor) -> tuple[str, int]:
    """(device, address) of the memory `tensor` lives in (its views share it)."""
    return str(tensor.device), tensor.untyped_storage().data_ptr()


class _Writes(TorchDispatchMode):
    """Records storage_key of every tensor an op writes (its schema marks the argument as
    written) and runs the op unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.written: set[tuple[str, int]] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for index, argument in enumerate(func._schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            value = args[index] if index < len(args) else kwargs.get(argument.name)
            for tensor in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(tensor, torch.Tensor) and tensor.device.type != "meta":
                    self.written.add(storage_key(tensor))
        return func(*args, **kwargs)


def run_noting_writes(run: Callable[[], Any]) -> tuple[Any, set[tuple[str, int]]]:
    """``run()``'s result and the storages it wrote.

    Example:
        >>> weight = torch.nn.Parameter(torch.zeros(2))
        >>> _, written = run_noting_writes(lambda: weight.data.add_(1))
        >>> storage_key(weight) in written, weight._version
        (True, 0)
    """
    with _Writes() as watch:
        result = run()
    return result, watch.written
