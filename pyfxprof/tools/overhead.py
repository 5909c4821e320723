"""Side-by-side overhead of timing methods on one model in one process: plain GraphModule,
pyfxprof codegen and interpreter, the tutorial's time.time interpreter, and torch.profiler."""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
import torch.fx as fx

from ..capture.dynamo import dynamo_capture
from ..capture.inputs import bind_inputs, split_inputs
from ..capture.model_state import evaluation_mode
from ..capture.tracing import Capture, capture, timed_nodes
from ..data.units import format_ns
from ..timing.executors import CodegenExecutor
from ..timing.interpreter import ProfilingInterpreter
from .baseline import TimeTimeInterpreter

PLAIN = "plain GraphModule"


@dataclass
class OverheadReport:
    """Per-run wall times (ns) of each method, and what they add per node over the plain run."""

    model: str
    n_nodes: int
    samples_ns: dict[str, np.ndarray]
    aten_ops_per_run: int = 0
    notes: list[str] = field(default_factory=list)

    def median(self, method: str) -> float:
        return float(np.median(self.samples_ns[method]))

    def added_per_node_ns(self, method: str) -> float:
        """(median run time of `method` - median of the plain run) / nodes."""
        return (self.median(method) - self.median(PLAIN)) / self.n_nodes

    def inflation(self, method: str) -> float:
        """Median run time of `method` over the plain run's."""
        return self.median(method) / self.median(PLAIN)

    def format(self) -> str:
        """A table: method, median run, IQR, added ns/node, x vs codegen, total inflation."""
        lines = [f"overhead on {self.model}: {self.n_nodes} nodes, "
                 f"{len(self.samples_ns[PLAIN])} runs per method in interleaved blocks"
                 " (torch.profiler in its own session)",
                 f"{'method':<24}{'median run':>12}{'IQR':>11}{'added/node':>13}"
                 f"{'/ codegen':>12}{'inflation':>11}"]
        codegen = self.added_per_node_ns("pyfxprof codegen")
        for method, values in self.samples_ns.items():
            q25, q75 = np.percentile(values, [25, 75])
            added = self.added_per_node_ns(method)
            usable = method not in (PLAIN, "pyfxprof codegen") and codegen > 0
            ratio = f"{added / codegen:.1f}x" if usable else "-"
            lines.append(f"{method:<24}{format_ns(self.median(method)):>12}"
                         f"{format_ns(q75 - q25):>11}{format_ns(added):>13}{ratio:>12}"
                         f"{self.inflation(method):>10.3f}x")
        if self.aten_ops_per_run:
            extra = self.median("torch.profiler") - self.median(PLAIN)
            lines.append(f"torch.profiler recorded {self.aten_ops_per_run} events per run: "
                         f"{format_ns(extra / self.aten_ops_per_run)} added per event")
        return "\n".join(lines + self.notes)


def _timed_block(call: Callable[[], Any], repeats: int) -> list[int]:
    """Wall ns of `repeats` back-to-back calls after one untimed call (warm caches), with the
    cyclic GC paused so its pauses land in no method's runs."""
    gc.collect()
    gc.disable()
    try:
        call()
        times = []
        for _ in range(repeats):
            start = time.perf_counter_ns()
            call()
            times.append(time.perf_counter_ns() - start)
        return times
    finally:
        gc.enable()


def _methods(gm: fx.GraphModule, args: tuple, n_nodes: int) -> dict[str, Callable[[], Any]]:
    codegen = CodegenExecutor(gm, n_nodes)
    interpreter = ProfilingInterpreter(gm)
    tutorial = TimeTimeInterpreter(gm)
    return {PLAIN: lambda: gm(*args),
            "pyfxprof codegen": lambda: codegen.run(args),
            "pyfxprof interpreter": lambda: interpreter.run(*args),
            "time.time interpreter": lambda: tutorial.run(*args)}, codegen, interpreter


def _captured(model: torch.nn.Module, example_inputs: Any,
              capture_mode: str) -> tuple[fx.GraphModule, tuple]:
    """(the graph, its positional inputs) of `model` on `example_inputs` (a tuple, or a dict
    of keywords for "dynamo"), captured by torch.fx ("fx") or TorchDynamo ("dynamo")."""
    if capture_mode == "fx":
        return capture(model).graph_module, example_inputs
    bound = bind_inputs(model, *split_inputs(example_inputs))
    gm, graph_inputs = dynamo_capture(model, bound)
    return gm, Capture(gm, "dynamo", graph_inputs=graph_inputs).graph_args(bound.args,
                                                                          bound.kwargs)


def compare_overhead(model: torch.nn.Module, example_inputs: Any, runs: int = 30,
                     warmup: int = 3, name: str | None = None, block: int = 5,
                     capture_mode: str = "fx") -> OverheadReport:
    """Time each method `runs` times in blocks of `block` back-to-back runs, the methods'
    blocks interleaved round-robin so drift hits all alike; torch.profiler in its own session.
    `capture_mode` "fx" or "dynamo" (the graph Dynamo builds; every method runs it).

    Example:
        >>> m = torch.nn.Sequential(*[torch.nn.ReLU() for _ in range(4)])
        >>> compare_overhead(m, (torch.zeros(4),), runs=3, warmup=1).n_nodes
        4
    """
    with evaluation_mode(model), torch.inference_mode():
        gm, example_inputs = _captured(model, example_inputs, capture_mode)
        n_nodes = len(timed_nodes(gm.graph))
        methods, codegen, interpreter = _methods(gm, example_inputs, n_nodes)
        for call in methods.values():
            for _ in range(warmup):
                call()
        samples: dict[str, list[int]] = {method: [] for method in methods}
        while len(samples[PLAIN]) < runs:
            repeats = min(block, runs - len(samples[PLAIN]))
            for method, call in methods.items():
                samples[method] += _timed_block(call, repeats)
            codegen.reset()
            interpreter.reset()
        torch_samples, events = _torch_profiler_runs(gm, example_inputs, runs, warmup)
    samples["torch.profiler"] = torch_samples
    arrays = {k: np.asarray(v, dtype=np.int64) for k, v in samples.items()}
    return OverheadReport(name or type(model).__name__, n_nodes, arrays, events)


def _torch_profiler_runs(gm: fx.GraphModule, args: tuple, runs: int,
                         warmup: int) -> tuple[list[int], int]:
    """Run times inside one active torch.profiler session, and its events per run."""
    from torch.profiler import ProfilerActivity, profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(warmup):
            gm(*args)
        times = _timed_block(lambda: gm(*args), runs)
    events = len(prof.events()) // (warmup + runs + 1)
    return times, events
