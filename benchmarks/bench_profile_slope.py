"""What a whole `pyfxprof.profile()` call adds per node and run: the slope of its wall time over
`runs` (two run counts, interleaved, repeated) against the slope of plain runs of the graph.

Run: .venv/bin/python benchmarks/bench_profile_slope.py [--repeats N]
"""

import argparse
import statistics
import time

import torch
from machine import describe_machine
from workloads import tensor_plus_one_chain

import pyfxprof


def wall(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runs", type=int, nargs=2, default=(200, 1200))
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(describe_machine())
    gm, inputs = tensor_plus_one_chain()
    nodes, (low, high) = 300, args.runs

    def plain(runs):
        for _ in range(runs):
            gm(*inputs)

    def profiled(runs):
        pyfxprof.profile(gm, inputs, runs=runs, warmup=0, progress=False)

    added = []
    with torch.inference_mode():
        profiled(low)  # one-time costs (first capture, calibration, lazy imports) not timed
        for _ in range(args.repeats):  # each repeat: the four calls interleaved
            times = {(f.__name__, r): wall(lambda: f(r)) for f in (plain, profiled)
                     for r in (low, high)}
            slope = {name: (times[name, high] - times[name, low]) / (high - low)
                     for name in ("plain", "profiled")}
            added.append((slope["profiled"] - slope["plain"]) / nodes * 1e9)
            print(f"plain {slope['plain'] * 1e6:.1f} µs/run, profile() "
                  f"{slope['profiled'] * 1e6:.1f} µs/run: {added[-1]:.0f} ns added per node")
    print(f"median of {args.repeats}: {statistics.median(added):.0f} ns per node")


if __name__ == "__main__":
    main()
