"""Accuracy: chains of leaf modules that busy-wait about 2, 20, 200 and 2000 µs (a fixed amount
of arithmetic, no clock reads during the work), timed by pyfxprof codegen, pyfxprof
interpreter, the FX tutorial's time.time interpreter and torch.profiler (a record_function
range inside the module, its only view of custom code); the error of each against the truth.

The truth for a node in a run is what that node costs in the *uninstrumented* model:
  * its busy-wait body, read on the profiler clock from inside the module in that very run
    (so a slower or preempted run is in the truth too), plus
  * its cost outside that body (module call and return, logging the body), measured in place:
    the same chain, traced the same way but not instrumented, timed whole on the profiler clock
    in the same block of runs; (chain time - empty graph time) / nodes - mean body = outside
    cost per node. Measured right after the same work, it includes the cold caches and branch
    predictors the work leaves behind, which a hot zero-work measurement misses.

Methods and the plain chain run in interleaved blocks, so drift of the machine between blocks
moves truth and measurement together. The process is pinned to one core and torch to one thread.
Error = measured - truth, per node and run; the table gives the median over all nodes and runs,
its % of the median truth, and the IQR; then the spread of the codegen median across blocks.

Run: .venv/bin/python benchmarks/bench_accuracy.py [--runs N] [--blocks B] [--nodes K]
"""

import argparse
import os

os.environ.setdefault("KINETO_LOG_LEVEL", "5")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.fx as fx  # noqa: E402
from machine import describe_machine  # noqa: E402

import pyfxprof  # noqa: E402
from pyfxprof import _C  # noqa: E402
from pyfxprof.tools.baseline import TimeTimeInterpreter  # noqa: E402
from pyfxprof.capture.tracing import ProfilingTracer  # noqa: E402

DURATIONS_NS = (2_000, 20_000, 200_000, 2_000_000)
METHODS = ("pyfxprof codegen", "pyfxprof interpreter", "time.time interpreter", "torch.profiler")


class BusyWait(torch.nn.Module):
    """A leaf module doing `iterations` additions in C; logs the body's duration from inside."""

    def __init__(self, iterations: int, log: list) -> None:
        super().__init__()
        self.iterations, self.log = iterations, log

    def forward(self, x):
        start = _C.now_ns()
        _C._busy_loop(self.iterations)
        self.log.append(_C.now_ns() - start)
        return x


class LabelledBusyWait(BusyWait):
    """BusyWait inside a torch.profiler user range, the way torch.profiler sees custom code."""

    def forward(self, x):
        with torch.profiler.record_function("busy_wait"):
            start = _C.now_ns()
            _C._busy_loop(self.iterations)
            self.log.append(_C.now_ns() - start)
        return x


class Chain(torch.nn.Module):
    def __init__(self, waits: list) -> None:
        super().__init__()
        self.waits = torch.nn.ModuleList(waits)

    def forward(self, x):
        for wait in self.waits:
            x = wait(x)
        return x


def format_ns(ns: float) -> str:
    return f"{ns / 1000:.1f} µs" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


def ns_per_iteration() -> float:
    """Median ns per _C._busy_loop iteration over 7 runs of ~10 ms."""
    samples = []
    for _ in range(7):
        start = _C.now_ns()
        _C._busy_loop(20_000_000)
        samples.append((_C.now_ns() - start) / 20_000_000)
    return float(np.median(samples))


def traced(model: torch.nn.Module) -> fx.GraphModule:
    """`model` traced with the busy-waits as leaves (call_module nodes), as pyfxprof does."""
    graph = ProfilingTracer(leaf_modules=[BusyWait]).trace(model)
    return fx.GraphModule(model, graph, type(model).__name__)


class Case:
    """One duration: a plain chain (for the truth) and a labelled one (for torch.profiler)."""

    def __init__(self, iterations: int, nodes: int) -> None:
        self.nodes = nodes
        self.log: list[int] = []
        self.chain = Chain([BusyWait(iterations, self.log) for _ in range(nodes)])
        self.labelled = Chain([LabelledBusyWait(iterations, self.log) for _ in range(nodes)])
        self.plain = traced(self.chain)
        self.plain_labelled = traced(self.labelled)
        self.errors: dict[str, list[np.ndarray]] = {m: [] for m in METHODS}
        self.truths: list[np.ndarray] = []
        self.bodies_seen: list[np.ndarray] = []

    def bodies(self, runs: int) -> np.ndarray:
        """The last `runs` runs' logged bodies, runs x nodes."""
        return np.asarray(self.log[-runs * self.nodes:], dtype=np.int64).reshape(runs, self.nodes)


EMPTY = fx.GraphModule(torch.nn.Module(), fx.Graph(), "Empty")
EMPTY.graph.output(EMPTY.graph.placeholder("x"))
EMPTY.recompile()


def whole_run_ns(module, x) -> int:
    start = _C.now_ns()
    module(x)
    return _C.now_ns() - start


def outside_cost_ns(case: Case, module: fx.GraphModule, runs: int) -> np.ndarray:
    """ns per node outside its logged body in the uninstrumented chain, one value per run."""
    x, per_node = torch.zeros(1), []
    for _ in range(runs):
        empty = whole_run_ns(EMPTY, x)
        total = whole_run_ns(module, x)
        body = float(np.mean(case.log[-case.nodes:]))
        per_node.append((total - empty) / case.nodes - body)
    return np.asarray(per_node)


def measure_pyfxprof(case: Case, mode: str, runs: int) -> np.ndarray:
    prof = pyfxprof.profile(case.chain, (torch.zeros(1),), runs=runs, warmup=1, mode=mode,
                            leaf_modules=[BusyWait], progress=False)
    return prof.samples


def measure_time_time(case: Case, runs: int) -> np.ndarray:
    interp = TimeTimeInterpreter(case.plain)
    for _ in range(runs):
        interp.run(torch.zeros(1))
    timed = [n for n in interp.runtimes_sec if n.op == "call_module"]
    seconds = np.stack([np.asarray(interp.runtimes_sec[n]) for n in timed], axis=1)
    return np.rint(seconds * 1e9).astype(np.int64)


def measure_torch_profiler(case: Case, runs: int) -> np.ndarray:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(runs):
            case.plain_labelled(torch.zeros(1))
    events = sorted((e for e in prof.events() if e.name == "busy_wait"),
                    key=lambda e: e.time_range.start)
    elapsed = np.asarray([e.time_range.elapsed_us() * 1000 for e in events])
    return np.rint(elapsed).astype(np.int64).reshape(runs, case.nodes)


def run_block(case: Case, runs: int) -> None:
    """Every method on `runs` runs, each scored against the outside cost measured in place:
    plain runs right before and right after the method's runs (median of both)."""
    methods = {"pyfxprof codegen": (lambda: measure_pyfxprof(case, "codegen", runs), case.plain),
               "pyfxprof interpreter": (lambda: measure_pyfxprof(case, "interpreter", runs),
                                        case.plain),
               "time.time interpreter": (lambda: measure_time_time(case, runs), case.plain),
               "torch.profiler": (lambda: measure_torch_profiler(case, runs),
                                  case.plain_labelled)}
    for method, (measure, plain) in methods.items():
        before = outside_cost_ns(case, plain, runs)
        measured = measure()
        bodies = case.bodies(runs)
        outside = np.median(np.concatenate([before, outside_cost_ns(case, plain, runs)]))
        case.errors[method].append(measured - (bodies + outside))
        if method == "pyfxprof codegen":
            case.truths.append(bodies + outside)
            case.bodies_seen.append(bodies)
        case.log.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200, help="timed runs per method in all")
    parser.add_argument("--block-runs", type=int, default=5,
                        help="runs per method between two plain measurements")
    parser.add_argument("--nodes", type=int, default=10, help="busy-wait modules per chain")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    torch.set_num_threads(1)
    print(describe_machine())
    rate = ns_per_iteration()
    cases = [Case(max(1, round(d / rate)), args.nodes) for d in DURATIONS_NS]
    blocks = max(1, args.runs // args.block_runs)
    for _ in range(blocks):
        for case in cases:
            run_block(case, args.block_runs)
    print_table(cases, f"error = measured - truth over {blocks} blocks x {args.block_runs} "
                       f"runs x {args.nodes} nodes: median, % of the median truth, [IQR]")


def print_table(cases: list, title: str) -> None:
    print(title)
    width = 29
    print(f"{'busy-wait (nominal)':<26}" + "".join(f"{d // 1000:>{width - 3}} µs"
                                                   for d in DURATIONS_NS))
    for label, seen in (("median busy-wait body", [c.bodies_seen for c in cases]),
                        ("median truth (whole node)", [c.truths for c in cases])):
        medians = [np.median(np.concatenate(s)) for s in seen]
        print(f"{label:<26}" + "".join(f"{format_ns(m):>{width}}" for m in medians))
    for method in METHODS:
        cells = []
        for case in cases:
            err = np.concatenate(case.errors[method]).ravel()
            q25, median, q75 = np.percentile(err, [25, 50, 75])
            truth = np.median(np.concatenate(case.truths))
            cells.append(f"{median:>+8.0f} ns {median / truth * 100:>+7.2f}% [{q75 - q25:>5.0f}]")
        print(f"{method:<26}" + "".join(f"{c:>{width}}" for c in cells))
    quartiles = []
    for case in cases:
        medians = [np.median(e) for e in case.errors["pyfxprof codegen"]]
        q25, q75 = np.percentile(medians, [25, 75])
        quartiles.append(f"{q25:+.0f} … {q75:+.0f} ns")
    print(f"{'codegen, block medians':<26}" + "".join(f"{q:>{width}}" for q in quartiles)
          + "   (quartiles over blocks)")


if __name__ == "__main__":
    main()
