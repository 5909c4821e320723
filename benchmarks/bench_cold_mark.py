"""The instrumentation's own error, measured directly: the cost of an empty interval between two
marks right after a node's work (cold-ish caches and predictors), against the next empty
interval and the hot-loop calibration pyfxprof subtracts. Their difference bounds what the
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
from pyfxprof.timing.calibration import calibrate_codegen

WORK_ITERATIONS = (0, 4_000, 40_000, 400_000)  # about 0, 2, 20 and 200 µs of arithmetic


def work(x, iterations: int):
    """A node doing `iterations` additions in C (no clock reads)."""
    _C._busy_loop(iterations)
    return x


fx.wrap("work")


def graph_with_trailing_marks(iterations: int, nodes: int = 4) -> fx.GraphModule:
    """`nodes` work nodes, each followed by three consecutive marks (two empty intervals)."""
    graph = fx.Graph()
    value = graph.placeholder("x")
    for k in range(nodes):
        value = graph.call_function(work, (value, iterations))
        for j in range(3):
            graph.call_function(_C.mark, (k * 10 + j,))
    graph.output(value)
    return fx.GraphModule(torch.nn.Module(), graph, "TrailingMarks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
    print(describe_machine())
    calibration = calibrate_codegen()
    print(f"calibrated empty interval (hot loop, subtracted from every node): "
          f"{calibration.overhead_ns:.1f} ns")
    print(f"{'work before':>22}{'1st empty interval':>20}{'2nd empty interval':>20}")
    for iterations in WORK_ITERATIONS:
        module = graph_with_trailing_marks(iterations)
        _C.drain()
        for _ in range(args.runs):
            module(0)
        stamps = _C.drain()["timestamp_ns"].reshape(args.runs, -1, 3)
        first = np.median(stamps[:, :, 1] - stamps[:, :, 0])
        second = np.median(stamps[:, :, 2] - stamps[:, :, 1])
        print(f"{iterations:>12,} additions{first:>17.0f} ns{second:>17.0f} ns")


if __name__ == "__main__":
    main()
