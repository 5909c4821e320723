"""What each timing method adds to a model's run, from paired rounds in one process: pyfxprof
codegen and interpreter, the FX tutorial's time.time interpreter and torch.profiler, each
against the plain GraphModule, with a 95% interval, and "not resolved" when that interval
holds zero (docs/overhead.md)."""

from __future__ import annotations

import functools
import gc
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
import torch.fx as fx

from ..capture.dynamo import dynamo_capture
from ..capture.inputs import bind_inputs, split_inputs
from ..capture.model_state import evaluation_mode
from ..data.rungs import DYNAMO, FX
from ..capture.tracing import Capture, capture, timed_nodes
from ..stats.order_statistics import median_interval, runs_needed
from ..data.units import format_ns
from ..errors import PyfxprofError
from ..timing.executors import CodegenExecutor
from ..timing.interpreter import ProfilingInterpreter
from ..timing.call_timer import gc_paused, timed_calls
from .baseline import TimeTimeInterpreter

TORCH_PROFILER = "torch.profiler"
#: Fewest paired rounds with which a 95% interval on the median difference exists (sign test).
MIN_ROUNDS = runs_needed(0.5)
#: Nodes of the default workload, on which per-node costs resolve: a chain of `x + 1`.
CHAIN_NODES = 300


@dataclass(frozen=True)
class Estimate:
    """The median of paired differences (ns) and its distribution-free 95% interval
    (order statistics of the sign test; None ends when there are fewer than MIN_ROUNDS)."""

    median: float
    low: float | None
    high: float | None

    @property
    def resolved(self) -> bool:
        """True when the interval exists and leaves zero out."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)

    def scaled(self, divisor: float) -> "Estimate":
        """The same estimate per unit (per node, per event)."""
        cut = lambda v: None if v is None else v / divisor  # noqa: E731
        return Estimate(self.median / divisor, cut(self.low), cut(self.high))

    def text(self) -> str:
        """'+41 ns [33 ns, 50 ns]' when resolved, else 'not resolved (±x)' (x: half the
        interval's width) or 'not resolved (fewer than 6 rounds)'.

        >>> Estimate(41.0, 33.0, 50.0).text(), Estimate(-5.0, -20.0, 12.0).text()
        ('+41 ns [33 ns, 50 ns]', 'not resolved (±16 ns)')
        """
        if self.low is None or self.high is None:
            return f"not resolved (fewer than {MIN_ROUNDS} rounds)"
        if not self.resolved:
            return f"not resolved (±{format_ns((self.high - self.low) / 2)})"
        sign = "+" if self.median >= 0 else ""
        return f"{sign}{format_ns(self.median)} [{format_ns(self.low)}, {format_ns(self.high)}]"


def paired_estimate(plain, method) -> Estimate:
    """Median of ``method - plain`` over paired rounds, with the sign test's 95% interval on
    that median (order statistics from Binomial(n, 1/2); no assumption on the distribution).

    >>> paired_estimate([100] * 30, range(110, 140))
    Estimate(median=24.5, low=19.0, high=30.0)
    """
    diffs = np.asarray(method, dtype=np.int64) - np.asarray(plain, dtype=np.int64)
    low, high = median_interval(diffs)
    return Estimate(float(np.median(diffs)), None if math.isinf(low) else low,
                    None if math.isinf(high) else high)


@dataclass
class OverheadReport:
    """Per method, the (plain, method) median call ns of each paired round, as an int64
    (rounds, 2) array, and what the method adds per call, per node and (torch.profiler) per
    recorded event."""

    model: str
    n_nodes: int
    rounds_ns: dict[str, np.ndarray]
    block: int = 1
    events_per_call: int = 0
    notes: list[str] = field(default_factory=list)

    def added(self, method: str) -> Estimate:
        """What `method` adds to one call (ns), from the paired rounds."""
        pairs = self.rounds_ns[method]
        return paired_estimate(pairs[:, 0], pairs[:, 1])

    def added_per_node(self, method: str) -> Estimate:
        """What `method` adds per node (ns)."""
        return self.added(method).scaled(self.n_nodes)

    def added_per_event(self) -> Estimate | None:
        """What torch.profiler adds per event it records (ns); None without events."""
        if not self.events_per_call or TORCH_PROFILER not in self.rounds_ns:
            return None
        return self.added(TORCH_PROFILER).scaled(self.events_per_call)

    def format(self) -> str:
        """A table: method, median plain and instrumented call, added per node [95%]."""
        rounds = len(next(iter(self.rounds_ns.values())))
        lines = [f"overhead on {self.model}: {self.n_nodes} nodes · {rounds} paired rounds "
                 f"per method (a block of {self.block} plain calls beside a block of "
                 f"{self.block} instrumented ones, order alternating) · added per node: "
                 "median of the rounds' differences [95% interval]",
                 f"{'method':<24}{'plain call':>12}{'with method':>13}  added per node"]
        for method, pairs in self.rounds_ns.items():
            plain, timed = np.median(pairs, axis=0)
            lines.append(f"{method:<24}{format_ns(plain):>12}{format_ns(timed):>13}  "
                         f"{self.added_per_node(method).text()}")
        per_event = self.added_per_event()
        if per_event is not None:
            lines.append(f"torch.profiler recorded {self.events_per_call} events per call: "
                         f"{per_event.text()} per event")
        return "\n".join(lines + self.notes)


def _block_median(call: Callable[[], Any], calls: int) -> int:
    """Median wall ns of `calls` back-to-back calls after one untimed call (warm caches).

    >>> _block_median(lambda: None, 3) >= 0
    True
    """
    call()
    return int(np.median(timed_calls(call, calls=calls)))


def _between_rounds(executors: list) -> None:
    """Between rounds: the executors' records dropped, the cyclic garbage collected (the GC
    is paused during the rounds)."""
    for executor in executors:
        executor.reset()
    gc.collect()


def _torch_profiler_block(call: Callable[[], Any]) -> Callable[[int], int]:
    """A block timed inside a torch.profiler session of its own (started and stopped
    outside the timed calls)."""
    from torch.profiler import ProfilerActivity, profile as torch_profile

    def block(calls: int) -> int:
        with torch_profile(activities=[ProfilerActivity.CPU]):
            return _block_median(call, calls)
    return block


def _events_per_call(call: Callable[[], Any], calls: int = 3) -> int:
    """Events torch.profiler records per call (counted in a session of their own)."""
    from torch.profiler import ProfilerActivity, profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            call()
    events = prof.events()
    assert events is not None  # (None only before a session ran)
    return len(events) // calls


def _methods(gm: fx.GraphModule, args: tuple, n_nodes: int) -> tuple[dict, list]:
    """{method: block(calls) -> median ns}, and the executors to reset between rounds."""
    codegen = CodegenExecutor(gm, n_nodes)
    interpreter = ProfilingInterpreter(gm)
    tutorial = TimeTimeInterpreter(gm)
    calls = {"pyfxprof codegen": lambda: codegen.run(args),
             "pyfxprof interpreter": lambda: interpreter.run(*args),
             "time.time interpreter": lambda: tutorial.run(*args)}
    blocks: dict[str, Callable[[int], int]] = {
        name: functools.partial(_block_median, call) for name, call in calls.items()}
    blocks[TORCH_PROFILER] = _torch_profiler_block(lambda: gm(*args))
    return blocks, [codegen, interpreter]


def paired_rounds(plain: Callable[[int], int], methods: dict[str, Callable[[int], int]],
                  rounds: int, block: int, between: Callable[[], None] = lambda: None
                  ) -> dict[str, np.ndarray]:
    """Per method an int64 (rounds, 2) array of (plain, method) block medians: in each round
    every method's block sits beside a plain block of its own, the plain one first in even
    rounds and second in odd ones, so drift and order effects fall on both alike.

    >>> out = paired_rounds(lambda k: 10, {"m": lambda k: 12}, rounds=2, block=1)
    >>> out["m"].tolist()
    [[10, 12], [10, 12]]
    """
    found: dict[str, list] = {name: [] for name in methods}
    for number in range(rounds):
        for name, method in methods.items():
            if number % 2 == 0:
                pair = (plain(block), method(block))
            else:
                timed = method(block)
                pair = (plain(block), timed)
            found[name].append(pair)
        between()
    return {name: np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
            for name, pairs in found.items()}


def _captured(model: torch.nn.Module, example_inputs: Any,
              capture_mode: str) -> tuple[fx.GraphModule, tuple]:
    """(the graph, its positional inputs) of `model` on `example_inputs` (a tuple, or a dict
    of keywords for "dynamo"), captured by torch.fx ("fx") or TorchDynamo ("dynamo")."""
    if capture_mode == FX:
        return capture(model).graph_module_or_raise(), example_inputs
    bound = bind_inputs(model, *split_inputs(example_inputs))
    gm, graph_inputs = dynamo_capture(model, bound)
    return gm, Capture(gm, DYNAMO, graph_inputs=graph_inputs).graph_args(bound.args,
                                                                          bound.kwargs)


def compare_overhead(model: torch.nn.Module, example_inputs: Any, rounds: int = 30,
                     warmup: int = 3, name: str | None = None, block: int = 5,
                     capture_mode: str = "fx") -> OverheadReport:
    """Paired rounds (see paired_rounds) of every method against the plain graph, after
    `warmup` untimed calls of each; `capture_mode` "fx" or "dynamo" (the graph Dynamo
    builds; every method runs it). Runs in eval mode under inference_mode.

    Example:
        >>> m = torch.nn.Sequential(*[torch.nn.ReLU() for _ in range(4)])
        >>> compare_overhead(m, (torch.zeros(4),), rounds=2, warmup=1, block=1).n_nodes
        4
    """
    with evaluation_mode(model), torch.inference_mode():
        gm, args = _captured(model, example_inputs, capture_mode)
        n_nodes = len(timed_nodes(gm.graph))
        if not n_nodes:
            raise PyfxprofError(f"{name or type(model).__name__} has no operations to time "
                                "(its graph only passes inputs through)")
        methods, executors = _methods(gm, args, n_nodes)
        plain = lambda k: _block_median(lambda: gm(*args), k)  # noqa: E731
        with gc_paused(collect=True):
            for method in [plain, *methods.values()] if warmup else ():
                method(warmup)
            found = paired_rounds(plain, methods, rounds, block,
                                  lambda: _between_rounds(executors))
        events = _events_per_call(lambda: gm(*args))
    return OverheadReport(name or type(model).__name__, n_nodes, found, block, events)


class AddChain(torch.nn.Module):
    """`nodes` small tensor ops in a row (`x + 1`): a graph whose per-node costs resolve."""

    def __init__(self, nodes: int = CHAIN_NODES) -> None:
        super().__init__()
        self.nodes = nodes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.nodes):
            x = x + 1
        return x


def chain_overhead(nodes: int = CHAIN_NODES, **options: Any) -> OverheadReport:
    """compare_overhead on AddChain(nodes) with a 16-element input (`options` as there).

    Example:
        >>> chain_overhead(8, rounds=2, warmup=1, block=1).n_nodes
        8
    """
    return compare_overhead(AddChain(nodes), (torch.zeros(16),),
                            name=f"chain of {nodes} x + 1 (16 floats)", **options)
