"""The variants a replay tries on a rebuilt node (channels_last, bf16, fp16, threads=N,
contiguous, inference_mode, compile): each one a no-argument call built beside the as-is call,
with the context it runs in (threads restored after each block)."""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..errors import ArgumentError
from .replay_build import Rebuilt

#: The variants by name ("threads=N" takes a count).
VARIANTS = ("channels_last", "bf16", "fp16", "threads=N", "contiguous", "inference_mode",
            "compile")
#: Relative difference (max abs error over the reference output's max magnitude) a variant
#: computing in this dtype may show before it is flagged.
TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 5e-2,
             torch.float16: 1e-2}


@dataclass
class VariantCall:
    """A variant ready to time: ``call()`` runs it inside ``context()``; ``dtype`` is what it
    computes in (its tolerance)."""

    name: str
    call: Callable[[], Any]
    context: Callable[[], contextlib.AbstractContextManager]
    dtype: torch.dtype


def _map_tensors(value: Any, change: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        return change(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_tensors(v, change) for v in value)
    if isinstance(value, dict):
        return {k: _map_tensors(v, change) for k, v in value.items()}
    return value


def _float_dtype(args: tuple, kwargs: dict) -> torch.dtype:
    found: list[torch.dtype] = []

    def seen(tensor: torch.Tensor) -> torch.Tensor:
        found.append(tensor.dtype)
        return tensor
    _map_tensors((args, kwargs), seen)
    return next((d for d in found if d.is_floating_point), torch.float32)


def _changed(built: Rebuilt, args: tuple, kwargs: dict,
             change: Callable[[torch.Tensor], torch.Tensor], module_change) -> Callable:
    """A call of a copy of the node with `change` applied to its tensors (and module)."""
    new_args, new_kwargs = _map_tensors(args, change), _map_tensors(kwargs, change)
    target = built.target if built.module is None else module_change(copy.deepcopy(built.module))
    return lambda: target(*new_args, **new_kwargs)


def _cast(dtype: torch.dtype) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda t: t.to(dtype) if t.is_floating_point() else t


def _channels_last(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t


def _threads(count: int) -> Callable[[], contextlib.AbstractContextManager]:
    @contextlib.contextmanager
    def context():
        before = torch.get_num_threads()
        torch.set_num_threads(count)
        try:
            yield
        finally:
            torch.set_num_threads(before)
    return context


def variant_call(name: str, built: Rebuilt, args: tuple, kwargs: dict) -> VariantCall:
    """The variant `name` of the node on these inputs, or an ArgumentError naming the choices.

    Example:
        >>> from pyfxprof.tools.replay_build import Rebuilt
        >>> spec = {"args": [{"tensor": [2, 3], "dtype": "float32", "stride": [3, 1],
        ...                   "device": "cpu"}], "kwargs": {}}
        >>> built = Rebuilt("relu", "call_function", "torch.relu", torch.relu, spec, None, 1.0)
        >>> variant_call("bf16", built, *built.inputs()).call().dtype
        torch.bfloat16
    """
    base = _float_dtype(args, kwargs)
    same = lambda: contextlib.nullcontext()  # noqa: E731
    if name in ("bf16", "fp16"):
        dtype = torch.bfloat16 if name == "bf16" else torch.float16
        call = _changed(built, args, kwargs, _cast(dtype), lambda m: m.to(dtype))
        return VariantCall(name, call, same, dtype)
    if name == "channels_last":
        call = _changed(built, args, kwargs, _channels_last,
                        lambda m: m.to(memory_format=torch.channels_last))
        return VariantCall(name, call, same, base)
    if name == "contiguous":
        call = _changed(built, args, kwargs, lambda t: t.contiguous(), lambda m: m)
        return VariantCall(name, call, same, base)
    as_is = _changed(built, args, kwargs, lambda t: t, lambda m: m)
    if name == "inference_mode":
        return VariantCall(name, as_is, torch.inference_mode, base)
    if name == "compile":
        target = torch.compile(built.target if built.module is None
                               else copy.deepcopy(built.module))
        return VariantCall(name, lambda: target(*args, **kwargs), same, base)
    if name.startswith("threads="):
        count = name.split("=", 1)[1]
        if not count.isdigit() or int(count) < 1:
            raise ArgumentError(f"variant {name!r}: threads=N takes a count of 1 or more")
        return VariantCall(name, as_is, _threads(int(count)), base)
    raise ArgumentError(f"unknown variant {name!r}; choose from {list(VARIANTS)}")
