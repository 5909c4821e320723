"""What a fresh output's first touch costs on this machine (docs/roofline.md): the smallest
allocation the CPU allocator maps anew on every call (its pages faulted in and zeroed by the
kernel at their first write), and the time per byte that first touch adds to a streaming op."""

from __future__ import annotations

import importlib.util
import mmap
import time
from typing import Callable, ContextManager

import torch

from .run_counters import PerRun, counted_per_run

#: Whether getrusage counts this process's page faults (Unix): without it no allocation is
#: known to be mapped anew.
HAS_GETRUSAGE = importlib.util.find_spec("resource") is not None

#: The allocation sizes probed, doubling from the smallest to the largest (bytes).
PROBE_BYTES = (64 << 10, 64 << 20)
#: Calls of one size before those whose page faults are counted (the allocator's steady
#: state: glibc raises its mmap threshold after the first free of a mapped block), and the
#: calls counted.
SETTLE_CALLS, COUNTED_CALLS = 2, 3
#: A call maps its allocation anew when it faults in at least this share of its pages.
FAULTED_SHARE = 0.5
#: The page size the share is counted in.
PAGE_BYTES = mmap.PAGESIZE


def minor_faults() -> int:
    """This process's minor page faults so far (getrusage; Unix only).

    Example:
        >>> minor_faults() >= 0  # doctest: +SKIP
        True
    """
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def faults_per_run(runs: int) -> ContextManager[PerRun]:
    """The process's minor page faults (all its threads) over the block, per run of its
    `runs` (run.run_counters.counted_per_run): what the runs' fresh outputs faulted in
    (docs/roofline.md, "Fresh outputs"). Two getrusage calls in all, outside the runs;
    ``per_run`` None without getrusage.

    Example:
        >>> with faults_per_run(2) as faults:
        ...     _ = [torch.ones(1 << 20) for _ in range(2)]
        >>> faults.per_run is None or faults.per_run >= 0
        True
    """
    return counted_per_run(minor_faults if HAS_GETRUSAGE else lambda: None, runs)


def mapped_anew(size: int) -> bool:
    """Whether every one of COUNTED_CALLS calls allocating `size` bytes and writing them
    once (after SETTLE_CALLS such calls) faults in FAULTED_SHARE of its pages or more."""
    for _ in range(SETTLE_CALLS):
        torch.empty(size, dtype=torch.uint8).fill_(1)
    for _ in range(COUNTED_CALLS):
        before = minor_faults()
        torch.empty(size, dtype=torch.uint8).fill_(1)
        if minor_faults() - before < (
                FAULTED_SHARE * size / PAGE_BYTES):
            return False
    return True


def first_touch_threshold(device: torch.device) -> int | None:
    """The smallest allocation (bytes) from which every probed size is mapped anew on every
    call (mapped_anew: each call's first write faults its pages in; glibc: 32 MiB and more on
    64-bit Linux), sizes doubling over PROBE_BYTES; None on a GPU (the caching allocator
    keeps its blocks), without getrusage, or when the largest probed size is reused.
    Sizes reused only sometimes (glibc below its mmap threshold, after trimming its heap)
    lie below it.

    Example:
        >>> threshold = first_touch_threshold(torch.device("cpu"))
        >>> threshold is None or PROBE_BYTES[0] <= threshold <= PROBE_BYTES[1]
        True
    """
    if device.type != "cpu" or not HAS_GETRUSAGE:
        return None
    threshold, size = None, PROBE_BYTES[0]
    while size <= PROBE_BYTES[1]:
        fresh = mapped_anew(size)
        threshold = (threshold or size) if fresh else None
        size *= 2
    return threshold


def _seconds(call: Callable[[], torch.Tensor], kept: list) -> float:
    """Wall seconds of one call of `call`, its result appended to `kept` (kept alive until
    the caller clears it: in a model an output is freed later, by another node)."""
    begin = time.perf_counter()
    kept.append(call())
    return time.perf_counter() - begin


def faults_per_page(b: torch.Tensor, c: torch.Tensor, calls: int = 3) -> float:
    """The minor page faults per output page of the triad a = b + 3c into a fresh output
    (the fewest of `calls`, each output freed after its call): what first touching a page
    mapped anew takes on this kernel (one or more faults); 1.0 without getrusage.

    Example:
        >>> b = c = torch.ones(1 << 10)
        >>> faults_per_page(b, c, calls=2) >= 0
        True
    """
    if not HAS_GETRUSAGE:
        return 1.0
    counts = []
    for _ in range(calls):
        before = minor_faults()
        torch.add(b, c, alpha=3.0)
        counts.append(minor_faults() - before)
    return min(counts) * PAGE_BYTES / (b.numel() * b.element_size())


def first_touch_cost(b: torch.Tensor, c: torch.Tensor, repeats: int = 5) -> float:
    """ns per output byte that a fresh output adds to the triad a = b + 3c: its best time
    with a fresh output less its best time into a kept buffer (the two interleaved, after
    one untimed call of each), over the output's bytes; at least 0. `b` and `c` should be
    large enough to be mapped anew (first_touch_threshold).

    Example:
        >>> b = c = torch.ones(1 << 10)
        >>> first_touch_cost(b, c, repeats=2) >= 0
        True
    """
    out, kept = torch.empty_like(b), [torch.add(b, c, alpha=3.0)]
    torch.add(b, c, alpha=3.0, out=out)
    buffered, fresh = [], []
    for _ in range(repeats):
        buffered.append(_seconds(lambda: torch.add(b, c, alpha=3.0, out=out), []))
        kept.clear()
        fresh.append(_seconds(lambda: torch.add(b, c, alpha=3.0), kept))
    return max(min(fresh) - min(buffered), 0.0) * 1e9 / (out.numel() * out.element_size())
