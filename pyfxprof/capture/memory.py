"""CUDA memory per node from torch's caching-allocator statistics, for the untimed analysis run."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

import torch


@dataclass
class NodeMemory:
    """Bytes allocated by the allocator during one node: net change, and peak above the start."""

    alloc_delta_bytes: int = 0
    peak_bytes: int = 0
    absolute_peak_bytes: int = 0  # everything allocated at the peak, not only the node's


@contextlib.contextmanager
def cuda_node_memory(device: torch.device | None) -> Iterator[NodeMemory]:
    """Measure the CUDA allocation delta and peak of the block on `device` (a no-op yielding
    zeros when `device` is not a CUDA device). Resets the device's peak statistic.

    Example:
        >>> with cuda_node_memory(None) as memory:
        ...     pass
        >>> memory.peak_bytes
        0
    """
    memory = NodeMemory()
    if device is None or device.type != "cuda":
        yield memory
        return
    torch.cuda.synchronize(device)
    start = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    try:
        yield memory
    finally:
        torch.cuda.synchronize(device)
        memory.alloc_delta_bytes = torch.cuda.memory_allocated(device) - start
        memory.absolute_peak_bytes = torch.cuda.max_memory_allocated(device)
        memory.peak_bytes = max(0, memory.absolute_peak_bytes - start)


def cuda_device_of(args: tuple) -> torch.device | None:
    """The CUDA device of the first CUDA tensor among `args`, or None."""
    for value in args:
        if isinstance(value, torch.Tensor) and value.is_cuda:
            return value.device
    return None
