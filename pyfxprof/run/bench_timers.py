"""The timers behind pyfxprof.bench(): a block of back-to-back calls of one callable, each call
timed natively (the codegen executor of profile(), so the same calibrated timer and CUDA
events), and the Python baselines (time.perf_counter / time.time around each call or block)."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
import torch
import torch.fx as fx
from torch.fx.node import Argument

from ..timing.executors import CodegenExecutor
from ..timing.call_timer import timed_calls

#: A block aims at this much time (ns) of calls ...
BLOCK_NS = 500_000
#: ... with at most this many calls (lines of generated code) and at least one.
MAX_BLOCK_CALLS = 500


def block_size(call_ns: float) -> int:
    """Calls per block for calls of about `call_ns` each.

    Example:
        >>> block_size(1_000), block_size(100_000), block_size(5e6), block_size(0)
        (500, 5, 1, 500)
    """
    if call_ns <= 0:
        return MAX_BLOCK_CALLS
    return int(min(max(BLOCK_NS // call_ns, 1), MAX_BLOCK_CALLS))


def _stand_in(*args: Any, **kwargs: Any) -> None:
    """The target the block's plain graph is generated with (FX cannot name every callable:
    partials, REPL lambdas); its nodes then point at the real callable, which the timed
    calls of the instrumented copy call (the plain graph's own code never runs)."""
    raise RuntimeError("the plain bench block never runs")


def block_module(fn: Callable, n_args: int, keywords: list[str], calls: int) -> fx.GraphModule:
    """A GraphModule whose graph calls `fn(*args, **kwargs)` `calls` times back to back, each
    result dropped at once (a module `fn` is its submodule "fn", looked up inside each timed
    call, as profile() times a submodule). Only its instrumented copy runs (BlockTimer).

    Example:
        >>> [n.target for n in block_module(abs, 1, [], 2).graph.nodes][1:3]
        [<built-in function abs>, <built-in function abs>]
    """
    root = torch.nn.Module()
    if isinstance(fn, torch.nn.Module):
        root.fn = fn
    graph = fx.Graph()
    args = tuple(graph.placeholder(f"arg{i}") for i in range(n_args))
    kwargs: dict[str, Argument] = {name: graph.placeholder(f"kw_{name}") for name in keywords}
    for _ in range(calls):
        if isinstance(fn, torch.nn.Module):
            graph.call_module("fn", args, kwargs)
        else:
            graph.create_node("call_function", _stand_in, args, kwargs, name="call")
    graph.output(None)
    module = fx.GraphModule(root, graph, "BenchBlock")
    for node in module.graph.nodes:
        if node.target is _stand_in:
            node.target = fn
    return module


class BlockTimer:
    """Times blocks of `calls` back-to-back calls of `fn(*args, **kwargs)`, each call on the
    native clock with the calibrated timer cost subtracted (timing/calibration.py), and with
    CUDA events when `device_events`.

    Example:
        >>> timer = BlockTimer(torch.add, (torch.ones(1), torch.ones(1)), {}, 4)
        >>> timer.run(3); [part.shape for part in timer.take()[:2]]
        [(3, 4), (3,)]
    """

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, calls: int,
                 device_events: bool = False) -> None:
        module = block_module(fn, len(args), list(kwargs), calls)
        self.calls = calls
        self.executor = CodegenExecutor(module, calls, device_events)
        self.inputs = tuple(args) + tuple(kwargs.values())
        self.overhead_ns = self.executor.calibration.overhead_ns

    def run(self, blocks: int) -> None:
        """Time `blocks` more blocks."""
        self.executor.table.reserve(blocks, 1 if self.executor.device is None else 2)
        run, inputs = self.executor.run, self.inputs
        for _ in range(blocks):
            run(inputs)

    def take(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Of the blocks since the last take: (each call's ns, blocks x calls; each block's ns,
        its begin to its end; CUDA-event ns of each call or None), timer cost subtracted."""
        timings = self.executor.timings()
        device, events = self.executor.device_samples(), self.executor.device
        if device is not None and events is not None:  # (samples come from the events)
            events.reset()
        return timings.intervals, timings.run_totals, device


#: Baseline timers: name -> (clock returning seconds, True: around each call, False: around
#: the whole block, divided by its calls).
BASELINES = {
    "perf_counter per call": (time.perf_counter, True),
    "perf_counter per block": (time.perf_counter, False),
    "time.time per call": (time.time, True),
    "time.time per block": (time.time, False),
}
#: bench(baseline=...) values, each naming the BASELINES rows it runs.
BASELINE_CHOICES = {
    "perf_counter": ("perf_counter per call", "perf_counter per block", "time.time per call",
                     "time.time per block"),
}


def python_timed_block(name: str, fn: Callable, args: tuple, kwargs: dict,
                       calls: int) -> np.ndarray:
    """One block of `calls` calls timed with baseline `name`, as a user would in Python:
    ns per call (one value a call, or the block's time / calls), uncorrected.

    Example:
        >>> python_timed_block("perf_counter per block", abs, (-1,), {}, 10).shape
        (1,)
    """
    clock, per_call = BASELINES[name]
    seconds = timed_calls(fn, args, kwargs, calls, clock, per_call)
    return seconds * 1e9 if per_call else seconds * 1e9 / calls


def python_timed_blocks(names: tuple[str, ...], fn: Callable, args: tuple, kwargs: dict,
                        calls: int, blocks: int) -> dict[str, list[np.ndarray]]:
    """`blocks` blocks of each baseline in `names`, the timers taking turns block by block."""
    found: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for _ in range(blocks):
        for name in names:
            found[name].append(python_timed_block(name, fn, args, kwargs, calls))
    return found


def call_once(fn: Callable, args: tuple, kwargs: dict) -> tuple[Any, float]:
    """(fn's result, seconds the call took on time.perf_counter)."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start
