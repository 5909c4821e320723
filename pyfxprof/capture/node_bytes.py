"""Bytes a node moves at least, for the roofline: its input tensors read, its module's
parameters and buffers read, its outputs written, by dtype (docs/roofline.md)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterator

import torch

from .model_state import dtype_name


def tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor in `value` (nested tuples, lists, dicts).

    Example:
        >>> [t.shape[0] for t in tensors({"a": (torch.ones(2), [torch.ones(3)]), "b": 1})]
        [2, 3]
    """
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors(item)


def storage_key(tensor: torch.Tensor) -> int:
    """What identifies the memory `tensor` reads: its storage's address, or the tensor's own
    id where it has no plain storage (meta, sparse, nested, or a wrapper subclass such as a
    collective's async result, whose storage raises when touched)."""
    if tensor.is_meta or tensor.layout != torch.strided:
        return id(tensor)
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return id(tensor)


def _by_dtype(tensors: Iterator[torch.Tensor], seen: set[int]) -> Counter:
    """Bytes per dtype name of `tensors`, each storage counted once (`seen`: the ids of
    storages already counted, updated)."""
    counts: Counter = Counter()
    for tensor in tensors:
        key = storage_key(tensor)
        if key in seen and key != 0:
            continue
        seen.add(key)
        counts[dtype_name(tensor.dtype)] += tensor.numel() * tensor.element_size()
    return counts


def _storage_bytes(tensor: torch.Tensor) -> int:
    """Bytes of the allocation `tensor` lives in (its storage's), else its own."""
    try:
        return int(tensor.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError, TypeError):
        return tensor.numel() * tensor.element_size()


def _fresh(result: Any, held: set[int]) -> tuple[int, int]:
    """(total, largest) bytes of the allocations `result`'s tensors live in that no key in
    `held` names: the outputs the node allocated (each allocation once)."""
    sizes = {storage_key(t): _storage_bytes(t) for t in tensors(result)
             if not t.is_meta and t.layout == torch.strided}
    fresh = [size for key, size in sizes.items() if key not in held and key]
    return sum(fresh), max(fresh, default=0)


def node_bytes(module: torch.nn.Module | None, args: Any, result: Any,
               kwargs: Any = None) -> dict[str, Any]:
    """The bytes columns of one node besides its outputs' (analysis' out_bytes): in_bytes (its
    tensor arguments, each storage once), param_bytes (the parameters and buffers of
    `module`, a call_module node's, not already among the arguments), bytes_by_dtype ("float32=1024, int64=64": read plus
    written) and dtype (the dtype moving the most bytes: the one whose peak applies).

    aliases_input: every output shares storage with an input (a view, a getitem, or an op
    in place): without FLOPs such a node moves no data (data.roofline).

    fresh_out_bytes, fresh_out_largest: the total and the largest allocation among the
    outputs that share storage with no argument (`kwargs`' too: an ``out=`` buffer), nor
    parameter or buffer: allocated by the node, whose first touch data.roofline charges
    when the allocator maps them anew (run.first_touch).

    A lower bound: what a kernel reads and writes at least, once each (docs/roofline.md).

    Example:
        >>> linear = torch.nn.Linear(4, 2)
        >>> x = torch.zeros(3, 4)
        >>> figures = node_bytes(linear, (x,), linear(x))
        >>> figures["in_bytes"], figures["param_bytes"], figures["bytes_by_dtype"]
        (48, 40, 'float32=112')
        >>> node_bytes(None, (x,), x.view(12))["aliases_input"]
        True
        >>> [node_bytes(None, (x,), out)["fresh_out_bytes"] for out in (x + 1, x)]
        [48, 0]
    """
    seen: set[int] = set()
    inputs = _by_dtype(tensors(args), seen)
    aliased = seen.copy()
    params = _by_dtype(iter([*module.parameters(), *module.buffers()]) if module is not None
                       else iter(()), seen)
    outputs = _by_dtype(tensors(result), set())
    fresh, largest = _fresh(result, seen | {storage_key(t) for t in tensors(kwargs)})
    total = inputs + params + outputs
    storages = [storage_key(t) for t in tensors(result)]
    return {"in_bytes": sum(inputs.values()), "param_bytes": sum(params.values()),
            "aliases_input": bool(storages) and all(p in aliased and p for p in storages),
            "fresh_out_bytes": fresh, "fresh_out_largest": largest,
            "bytes_by_dtype": ", ".join(f"{name}={count}" for name, count in
                                        sorted(total.items(), key=lambda kv: -kv[1])),
            "dtype": max(total, key=lambda name: total[name]) if total else ""}
