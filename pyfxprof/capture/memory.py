"""Memory per node for the untimed analysis run: CUDA caching-allocator statistics, and (with
profile_memory=True) torch.profiler's own allocator events per node, CPU and CUDA."""

from __future__ import annotations

import contextlib
import contextvars
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


#: Per-node columns of the allocator figures measured with profile_memory=True (bytes, one
#: analysis run): allocated, freed, peak above the node's start, and live at the node's end
#: (above the run's start), on the CPU and on CUDA devices.
ALLOCATOR_COLUMNS = tuple(f"{device}_{figure}_bytes" for device in ("cpu", "cuda")
                          for figure in ("alloc", "freed", "peak", "live"))
#: Name prefix of the record_function range around each node in the analysis run.
RANGE_PREFIX = "pyfxprof::"
_PROFILE_MEMORY: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "pyfxprof_profile_memory", default=False)


@contextlib.contextmanager
def profiling_memory(enabled: bool = True) -> Iterator[None]:
    """Analysis runs inside the block measure allocator figures per node (profile_memory).

    Example:
        >>> with profiling_memory():
        ...     memory_wanted()
        True
    """
    token = _PROFILE_MEMORY.set(bool(enabled))
    try:
        yield
    finally:
        _PROFILE_MEMORY.reset(token)


def memory_wanted() -> bool:
    """Whether the current analysis run measures allocator figures (see profiling_memory)."""
    return _PROFILE_MEMORY.get()


def node_range(name: str):
    """The record_function range the analysis run puts around node `name`."""
    return torch.autograd.profiler.record_function(RANGE_PREFIX + name)


@contextlib.contextmanager
def allocator_events(cuda: bool) -> Iterator[dict[str, dict[str, int]]]:
    """Run the block under torch.profiler with profile_memory=True (torch's own allocator
    reporting, CPU and, with `cuda`, CUDA); afterwards the yielded dict maps each node name
    whose node_range ran to its ALLOCATOR_COLUMNS figures.

    Example:
        >>> with allocator_events(cuda=False) as figures:
        ...     with node_range("a"):
        ...         _ = torch.zeros(1024)
        >>> figures["a"]["cpu_alloc_bytes"]
        4096
    """
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    figures: dict[str, dict[str, int]] = {}
    with torch.profiler.profile(activities=activities, profile_memory=True) as prof:
        yield figures
    devices = ("cpu", "cuda") if cuda else ("cpu",)
    profiler = prof.profiler
    assert profiler is not None and profiler.kineto_results is not None  # (set at its end)
    figures.update(node_figures(profiler.kineto_results.events(), devices))


def node_figures(events, devices: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """Per node range among torch.profiler's kineto `events`, the allocator figures on
    `devices` of the "[memory]" events inside it (by time), live bytes counted from the first
    event."""
    ranges = sorted((e.start_ns(), e.end_ns(), e.name()[len(RANGE_PREFIX):]) for e in events
                    if e.name().startswith(RANGE_PREFIX))
    memory = sorted((e.start_ns(), e.nbytes(), "cpu" if e.device_type().name == "CPU" else "cuda")
                    for e in events if e.name() == "[memory]")
    live = {"cpu": 0, "cuda": 0}
    figures, k = {}, 0
    for start, end, name in ranges:
        while k < len(memory) and memory[k][0] < start:  # between nodes (dead values freed)
            live[memory[k][2]] += memory[k][1]
            k += 1
        node = dict.fromkeys(ALLOCATOR_COLUMNS, 0)
        inside = {"cpu": 0, "cuda": 0}
        while k < len(memory) and memory[k][0] <= end:
            _, nbytes, device = memory[k]
            node[f"{device}_alloc_bytes" if nbytes > 0 else f"{device}_freed_bytes"] += abs(nbytes)
            inside[device] += nbytes
            node[f"{device}_peak_bytes"] = max(node[f"{device}_peak_bytes"], inside[device])
            k += 1
        for device in live:
            live[device] += inside[device]
            node[f"{device}_live_bytes"] = live[device]
        figures[name] = {column: value for column, value in node.items()
                         if column.startswith(devices)}
    return figures
