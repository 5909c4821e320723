"""The instrumentation's own error, measured directly: what a timed call measures around an empty
C function right after a node's work (cold-ish caches and predictors), against a second one
right after it and the hot-loop calibration pyfxprof subtracts. Their difference bounds what the
calibration under-subtracts per node.

Run: .venv/bin/python benchmarks/bench_cold_mark.py [--runs N]
"""

import argparse
import os

import numpy as np
import torch
import torch.fx as fx
from machine import describe_machine

from pyfxprof import _C
from pyfxprof.timing.calibration import calibrate_timed_calls

WORK_ITERATIONS = (0, 4_000, 40_000, 400_000)  # about 0, 2, 20 and 200 µs of arithmetic


def work(x, iterations: int):
    """A node doing `iterations` additions in C (no clock reads)."""
    _C._busy_loop(iterations)
    return x


fx.wrap("work")


def graph_with_trailing_empty_calls(table, iterations: int, nodes: int = 4) -> fx.GraphModule:
    """`nodes` work nodes, each followed by two timed calls of the empty C function _C._noop."""
    graph = fx.Graph()
    value = graph.placeholder("x")
    calls = _C.timed_calls(table)
    for k in range(nodes):
        value = graph.call_function(work, (value, iterations))
        for j in range(2):
            calls.set(2 * k + j, _C._noop)
            graph.call_function(calls.timed, (2 * k + j, 0))
    graph.output(value)
    return fx.GraphModule(torch.nn.Module(), graph, "TrailingEmptyCalls")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    print(describe_machine())
    calibration = calibrate_timed_calls()
    print(f"calibrated timed empty call (hot loop, subtracted from every node): "
          f"{calibration.overhead_ns:.1f} ns")
    print(f"{'work before':>22}{'1st empty call':>18}{'2nd empty call':>18}")
    for iterations in WORK_ITERATIONS:
        table = _C.SampleTable(8)
        module = graph_with_trailing_empty_calls(table, iterations)
        for _ in range(args.runs):
            table.begin_run()
            module(0)
            table.end_run()
        samples = table.take()["samples"].reshape(args.runs, -1, 2)
        first, second = np.median(samples[:, :, 0]), np.median(samples[:, :, 1])
        print(f"{iterations:>12,} additions{first:>15.0f} ns{second:>15.0f} ns")


if __name__ == "__main__":
    main()
