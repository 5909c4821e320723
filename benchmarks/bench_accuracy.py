"""Accuracy: a graph of nodes that do a fixed amount of work lasting about 2, 20, 200 and
2000 µs (an arithmetic loop, no clock reads), timed by
pyfxprof codegen, pyfxprof interpreter, the FX tutorial's time.time interpreter and
torch.profiler (record_function inside the wait, its only view of custom code); error of each against the truth.

The truth for each node and run is the wait body's duration, read on the profiler clock from
inside the node (so whatever the machine does to the node while it runs, preemption included,
is in the truth too), plus the cost of the node's remaining work — calling the function,
returning, logging — measured separately on an uninstrumented FX graph of zero-work nodes. A method's error is its node time
minus that truth. The process is pinned to one core and torch to one thread, since
a migration between cores mid-node or a busy neighbour shows up as error on a 2-core VM.

Run: .venv/bin/python benchmarks/bench_accuracy.py [--runs N]
"""

import argparse
import os
import time

os.environ.setdefault("KINETO_LOG_LEVEL", "5")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.fx as fx  # noqa: E402
from machine import describe_machine  # noqa: E402

import pyfxprof  # noqa: E402
from pyfxprof import _C  # noqa: E402
from pyfxprof.baseline import TimeTimeInterpreter  # noqa: E402

DURATIONS_NS = (2_000, 20_000, 200_000, 2_000_000)
TRUTH: dict[int, list[int]] = {d: [] for d in (0,) + DURATIONS_NS}
#: Iterations of _C._busy_loop (arithmetic, no clock reads) lasting each duration, set by
#: calibrate_iterations(). A clock-polling spin is avoided: on the VM these figures come from,
#: code right after a long busy-wait on the TSC runs measurably slower, which blurs the truth.
ITERATIONS: dict[int, int] = {0: 0}


def calibrate_iterations() -> None:
    """Iterations per duration, from the median ns per iteration over 7 runs of ~10 ms."""
    per_iteration = []
    for _ in range(7):
        start = _C.now_ns()
        _C._busy_loop(20_000_000)
        per_iteration.append((_C.now_ns() - start) / 20_000_000)
    ns_per_iteration = float(np.median(per_iteration))
    ITERATIONS.update({d: max(1, round(d / ns_per_iteration)) for d in DURATIONS_NS})


def wait(x, ns: int):
    """Busy-wait `ns`; log the body's duration, read on the profiler clock from inside."""
    start = _C.now_ns()
    _C._busy_loop(ITERATIONS[ns])
    TRUTH[ns].append(_C.now_ns() - start)
    return x


def labelled_wait(x, ns: int):
    """wait() inside a torch.profiler user range, the way torch.profiler sees custom code."""
    with torch.profiler.record_function(f"wait_{ns}"):
        start = _C.now_ns()
        _C._busy_loop(ITERATIONS[ns])
        TRUTH[ns].append(_C.now_ns() - start)
    return x


fx.wrap("wait")
fx.wrap("labelled_wait")


class Waits(torch.nn.Module):
    """A zero wait first (not scored: the first node after the previous run's 2 ms spin runs
    with cold caches, real time that would blur the comparison), then the scored waits."""

    def forward(self, x):
        x = wait(x, 0)
        for ns in DURATIONS_NS:
            x = wait(x, ns)
        return x


class LabelledWaits(torch.nn.Module):
    def forward(self, x):
        x = labelled_wait(x, 0)
        for ns in DURATIONS_NS:
            x = labelled_wait(x, ns)
        return x


def clear_truth() -> None:
    for values in TRUTH.values():
        values.clear()


def call_cost_ns(function, nodes: int = 200, repeats: int = 400) -> float:
    """ns of one node `function(x, 0)` in FX-generated code, uninstrumented, minus its logged
    body: the node's work outside the part it times itself (call, return, logging, the
    generated code's stores), measured in the same kind of code the profiler instruments."""
    graph = fx.Graph()
    value = graph.placeholder("x")
    for _ in range(nodes):
        value = graph.call_function(function, (value, 0))
    graph.output(value)
    chain = fx.GraphModule(torch.nn.Module(), graph, "ZeroWaits")
    x, per_node = torch.zeros(1), []
    for _ in range(repeats):
        clear_truth()
        start = time.perf_counter_ns()
        chain(x)
        per_node.append((time.perf_counter_ns() - start) / nodes - np.mean(TRUTH[0]))
    clear_truth()
    return float(np.median(per_node))


CALL_COST: dict = {}


def truth_matrix(runs: int, function=None) -> np.ndarray:
    spins = np.stack([np.asarray(TRUTH[d][-runs:]) for d in DURATIONS_NS], axis=1)
    return spins + np.rint(CALL_COST[function or wait]).astype(np.int64)


def measure_pyfxprof(mode: str, runs: int) -> np.ndarray:
    clear_truth()
    prof = pyfxprof.profile(Waits(), (torch.zeros(1),), runs=runs, warmup=0, mode=mode,
                            progress=False)
    return prof.samples[:, 1:] - truth_matrix(runs)


def measure_time_time(runs: int) -> np.ndarray:
    clear_truth()
    interp = TimeTimeInterpreter(Waits())
    for _ in range(runs):
        interp.run(torch.zeros(1))
    timed = [n for n in interp.runtimes_sec if n.op == "call_function"][1:]
    seconds = np.stack([np.asarray(interp.runtimes_sec[n]) for n in timed], axis=1)
    return np.rint(seconds * 1e9).astype(np.int64) - truth_matrix(runs)


def measure_torch_profiler(runs: int) -> np.ndarray:
    clear_truth()
    gm = fx.symbolic_trace(LabelledWaits())
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(runs):
            gm(torch.zeros(1))
    columns = []
    for d in DURATIONS_NS:
        events = [e for e in prof.events() if e.name == f"wait_{d}"]
        columns.append(np.asarray([e.time_range.elapsed_us() * 1000 for e in events]))
    return np.rint(np.stack(columns, axis=1)).astype(np.int64) - truth_matrix(runs, labelled_wait)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    torch.set_num_threads(1)
    calibrate_iterations()
    CALL_COST[wait] = call_cost_ns(wait)
    CALL_COST[labelled_wait] = call_cost_ns(labelled_wait, repeats=40)
    print(describe_machine())
    print(f"node work outside its self-timed body (part of the truth): plain "
          f"{CALL_COST[wait]:.0f} ns, with record_function {CALL_COST[labelled_wait]:.0f} ns")
    errors = {"pyfxprof codegen": measure_pyfxprof("codegen", args.runs),
              "pyfxprof interpreter": measure_pyfxprof("interpreter", args.runs),
              "time.time interpreter": measure_time_time(args.runs),
              "torch.profiler": measure_torch_profiler(args.runs)}
    print(f"median error (measured - truth) over {args.runs} runs, and as % of the truth; "
          "IQR of the error in brackets")
    header = "".join(f"{d // 1000:>22} µs" for d in DURATIONS_NS)
    print(f"{'method':<24}{header}")
    for method, err in errors.items():
        cells = []
        for k, d in enumerate(DURATIONS_NS):
            q25, median, q75 = np.percentile(err[:, k], [25, 50, 75])
            truth = d + CALL_COST[labelled_wait if method == "torch.profiler" else wait]
            cells.append(f"{median:>+7.0f} ns {median / truth * 100:>+6.2f}% [{q75 - q25:>4.0f}]")
        print(f"{method:<24}" + "".join(f"{c:>25}" for c in cells))


if __name__ == "__main__":
    main()
