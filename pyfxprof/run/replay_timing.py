"""A rebuilt node timed alone as bench() times a callable (run/bench_session.py): warm (the
same inputs each call) or cold (inputs, and a module's weights, rotated through copies larger
than the last-level cache); a node that writes to its inputs on fresh copies of them at every
call, timed apart from the copying."""

from __future__ import annotations

import copy
import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from ..stats.order_statistics import median_interval
from .bench_session import BenchSession, rng_kept
from .cache_size import last_level_cache_bytes
from .replay_build import Rebuilt
from .replay_inplace import block_ns, on_fresh_copies, pool_calls

#: Copies a cold replay rotates through: at least this many, and at most the cap.
MIN_COPIES, MAX_COPIES = 2, 256
#: The last-level cache assumed where the machine does not say (bytes).
DEFAULT_LLC_BYTES = 64 << 20
#: An in-place node's blocks: about this long (ns), and at least this many after a warm-up.
BLOCK_NS, MIN_BLOCKS = 500_000, 8


def _bytes_of(values: Any) -> int:
    leaves = values if isinstance(values, (list, tuple)) else [values]
    return sum(v.numel() * v.element_size() for v in leaves if isinstance(v, torch.Tensor))


def cache_bytes(args: tuple) -> int:
    """The last-level cache the inputs go through (cache_size.last_level_cache_bytes of
    their device: the GPU's L2 for CUDA tensors, else the CPU's), DEFAULT_LLC_BYTES when
    unknown.

    Example:
        >>> cache_bytes((torch.zeros(2),)) == last_level_cache_bytes(torch.device("cpu"))
        True
    """
    device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
    return last_level_cache_bytes(device) or DEFAULT_LLC_BYTES


def copies_for_cold(built: Rebuilt, args: tuple) -> int:
    """How many copies of the inputs (and weights) exceed the last-level cache twice over."""
    weights = 0 if built.module is None else _bytes_of(
        list(built.module.parameters()) + list(built.module.buffers()))
    one = max(1, _bytes_of(list(args)) + weights)
    return int(min(MAX_COPIES, max(MIN_COPIES, math.ceil(2 * cache_bytes(args) / one))))


def _targets(built: Rebuilt, count: int) -> list:
    """The node's target, and for a module `count - 1` copies of it (its own weights)."""
    return [built.target] + [copy.deepcopy(built.target) if built.module is not None
                             else built.target for _ in range(1, count)]


def rotating_call(built: Rebuilt, cache: str, seed: int = 0) -> Callable[[], Any]:
    """A no-argument call of the node: warm on one input set; cold cycling through copies of
    the inputs and, for a module, of the module (its own weights copied).

    Example:
        >>> from pyfxprof.run.replay_build import Rebuilt
        >>> built = Rebuilt("relu", "call_function", "torch.relu", torch.relu,
        ...     {"args": [{"tensor": [4], "dtype": "float32", "stride": [1], "device": "cpu"}],
        ...      "kwargs": {}}, None, 1.0)
        >>> rotating_call(built, "cold")().shape
        torch.Size([4])
    """
    args, kwargs = built.inputs(seed)
    count = 1 if cache == "warm" else copies_for_cold(built, args)
    sets = [(args, kwargs)] + [built.inputs(seed + i) for i in range(1, count)]
    turns = itertools.cycle(list(zip(_targets(built, count), sets)))

    def call():
        target, (call_args, call_kwargs) = next(turns)
        return target(*call_args, **call_kwargs)
    return call


def fresh_blocks(built: Rebuilt, cache: str, budget: float) -> np.ndarray:
    """ns per call of an in-place node's blocks (the warm-up block left out), each call on
    its own fresh copy of the inputs made before its block (untimed): warm, a pool of copies
    that fits in the cache; cold, copies (and module copies) twice the cache, called in the
    order they were made, so each one's inputs have left the cache by its turn. MIN_BLOCKS
    blocks at least, more while `budget` seconds last.

    Example:
        >>> from pyfxprof.run.replay_build import Rebuilt
        >>> built = Rebuilt("relu_", "call_function", "torch.relu_", torch.relu_,
        ...     {"args": [{"tensor": [64], "dtype": "float32", "stride": [1], "device": "cpu"}],
        ...      "kwargs": {}}, None, 1.0, mutates=True)
        >>> len(fresh_blocks(built, "warm", 0.0)) == MIN_BLOCKS
        True
        >>> bool((fresh_blocks(built, "warm", 0.05) > 0).all())
        True
    """
    args, kwargs = built.inputs()
    if cache == "cold":
        calls = copies_for_cold(built, args)
    else:
        per_call = built.in_graph_ns if math.isfinite(built.in_graph_ns) else 1.0
        calls = pool_calls(args, int(max(1, BLOCK_NS // max(per_call, 1.0))),
                           cache_bytes(args))
    makers = itertools.cycle([on_fresh_copies(t, args, kwargs)
                              for t in _targets(built, calls if cache == "cold" else 1)])
    found: list[float] = []
    deadline = time.monotonic() + budget
    while len(found) <= MIN_BLOCKS or time.monotonic() < deadline:
        found.append(block_ns(lambda: None, calls, lambda: next(makers)()))
    return np.asarray(found[1:], dtype=np.float64)


@dataclass(frozen=True)
class AloneTime:
    """A node's median ns per call alone, the 95% interval of that median (order statistics
    of its blocks) and how it was timed (the cache, the blocks, fresh inputs)."""

    median_ns: float
    low_ns: float
    high_ns: float
    how: str


def measured_alone(built: Rebuilt, cache: str, budget: float) -> AloneTime:
    """The node alone, warm or cold, under `budget` seconds: bench()'s median and interval
    (BenchSession's), or those of fresh_blocks for a node that writes to its inputs.

    Example:
        >>> from pyfxprof.run.replay_build import Rebuilt
        >>> built = Rebuilt("relu", "call_function", "torch.relu", torch.relu,
        ...     {"args": [{"tensor": [64], "dtype": "float32", "stride": [1], "device": "cpu"}],
        ...      "kwargs": {}}, None, 1.0)
        >>> found = measured_alone(built, "warm", 0.05)
        >>> found.low_ns <= found.median_ns <= found.high_ns, found.how.split(",")[0]
        (True, 'warm replay')
    """
    if built.mutates:
        blocks = fresh_blocks(built, cache, budget)
        low, high = median_interval(blocks)
        return AloneTime(float(np.median(blocks)), low, high,
                         f"{cache} replay, fresh inputs each call, {len(blocks)} blocks")
    with rng_kept():
        session = BenchSession(rotating_call(built, cache), (), {}, f"{built.name} ({cache})",
                               {}, {"budget": budget, "profile": False})
        while session.stopped is None:  # bench()'s rounds, for one callable
            session.round()
        found = session.measurement()
    low, high = found.interval
    calls = f"{found.block_size} calls" if found.block_size > 1 else "1 call"
    return AloneTime(found.median, low, high, f"{cache} replay, {found.blocks} blocks of {calls}")


def time_alone(built: Rebuilt, cache: str, budget: float) -> float:
    """Median ns per call of the node alone, warm or cold, under `budget` seconds
    (measured_alone's median).

    Example:
        >>> from pyfxprof.run.replay_build import Rebuilt
        >>> built = Rebuilt("relu", "call_function", "torch.relu", torch.relu,
        ...     {"args": [{"tensor": [64], "dtype": "float32", "stride": [1], "device": "cpu"}],
        ...      "kwargs": {}}, None, 1.0)
        >>> time_alone(built, "warm", 0.1) > 0
        True
    """
    return measured_alone(built, cache, budget).median_ns
