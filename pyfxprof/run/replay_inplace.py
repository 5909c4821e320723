"""In-place nodes in a replay: whether a node's call writes to its inputs (their version
counters move), fresh copies of its inputs for every timed call (made before a block of calls,
untimed), and the time per call of such a block."""

from __future__ import annotations

from typing import Any, Callable

import torch

from ..capture.inputs import map_tensors
from ..capture.node_bytes import tensors
from ..timing.native import _C

#: The most bytes of fresh input copies one warm block holds (a quarter of this is a pool
#: that stays in a last-level cache of this size).
POOL_SHARE = 4


def fresh_copy(value: Any) -> Any:
    """`value` with each tensor copied to new memory of the same shape, strides and dtype.

    Example:
        >>> x = torch.randn(3, 2).t()
        >>> y = fresh_copy((x,))[0]
        >>> y.stride() == x.stride(), y.data_ptr() != x.data_ptr(), torch.equal(x, y)
        (True, True, True)
    """
    def copied(tensor: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            out = torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype,
                                      device=tensor.device).copy_(tensor)
        return out.requires_grad_(tensor.requires_grad)
    return map_tensors(value, copied)


def _versions(tensors: list[torch.Tensor]) -> list[int]:
    try:
        return [t._version for t in tensors]
    except RuntimeError:  # inference tensors keep no version counter
        return []


def mutates_inputs(target: Callable, args: tuple, kwargs: dict) -> bool:
    """Whether one call of `target` on copies of these inputs writes to any of them (an
    in-place op, ``inplace=True``, an ``out=`` argument): their version counters move.

    Example:
        >>> x = torch.randn(4)
        >>> mutates_inputs(torch.relu_, (x,), {}), mutates_inputs(torch.relu, (x,), {})
        (True, False)
        >>> mutates_inputs(torch.nn.ReLU(inplace=True), (x,), {})
        True
    """
    args, kwargs = fresh_copy(args), fresh_copy(kwargs)
    found = list(tensors((args, kwargs)))
    before = _versions(found)
    target(*args, **kwargs)
    return bool(before) and before != _versions(found)


def bound(target: Callable, args: tuple, kwargs: dict) -> Callable[[], Any]:
    """A no-argument call of `target` on these inputs."""
    return lambda: target(*args, **kwargs)


def on_fresh_copies(target: Callable, args: tuple, kwargs: dict) -> Callable[[], Callable]:
    """A maker of no-argument calls of `target`, each on its own fresh copy of the inputs.

    Example:
        >>> x = torch.zeros(2)
        >>> make = on_fresh_copies(torch.Tensor.add_, (x, 1.0), {})
        >>> make()().tolist(), make()().tolist(), x.tolist()
        ([1.0, 1.0], [1.0, 1.0], [0.0, 0.0])
    """
    return lambda: bound(target, fresh_copy(args), fresh_copy(kwargs))


def pool_calls(args: Any, calls: int, cache_bytes: int) -> int:
    """How many calls of a warm block get their own fresh inputs: at most `calls`, and as
    many as fit in a POOL_SHARE-th of the cache (at least one).

    Example:
        >>> pool_calls((torch.zeros(1024),), 500, 64 << 10)   # 4 KiB each, 16 KiB of pool
        4
    """
    one = sum(t.numel() * t.element_size() for t in tensors(args))
    return int(max(1, min(calls, cache_bytes // POOL_SHARE // max(one, 1))))


def block_ns(call: Callable[[], Any], calls: int,
             make: Callable[[], Callable[[], Any]] | None = None) -> float:
    """ns per call of `calls` back-to-back calls: of `call`, or with `make` of `calls` calls
    it made before the block (each on fresh inputs; their making is not timed); CUDA work
    waited for on both sides of the block.

    Example:
        >>> block_ns(lambda: None, 10) > 0
        True
        >>> block_ns(lambda: None, 3, on_fresh_copies(torch.relu_, (torch.ones(8),), {})) > 0
        True
    """
    ready = [call] * calls if make is None else [make() for _ in range(calls)]
    _synchronize()
    start = _C.now_ns()
    for each in ready:
        each()
    _synchronize()
    return (_C.now_ns() - start) / calls


def _synchronize() -> None:
    """Wait for queued CUDA work (a block's time is its work's, not its launches')."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
