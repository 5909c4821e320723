"""Cost of the per-run noise read (pyfxprof.run.noise.RunMeter.read): getrusage(RUSAGE_THREAD)
for context switches, the thread's CPU clock and the profiler clock, appended to a list.

pyfxprof.profile takes one read per run (between consecutive runs), the loop API two (before
and after each call); never one per node. Reported next to its parts measured
in interleaved repeats in one process (a mark, for scale, costs ~20 ns: bench_mark.py): median ns per call over the repeats, the empty loop's
cost subtracted.

Run: .venv/bin/python benchmarks/bench_noise_read.py [--calls N] [--repeats R]
"""

import argparse
import resource
import time

import numpy as np
from machine import describe_machine

from pyfxprof import _C
from pyfxprof.run.noise import RunMeter


def _per_call(function, calls: int) -> float:
    started = time.perf_counter_ns()
    for _ in range(calls):
        function()
    return (time.perf_counter_ns() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    thread = resource.RUSAGE_THREAD
    candidates = {
        "RunMeter.read() (one per run)": None,
        "resource.getrusage(RUSAGE_THREAD)": lambda: resource.getrusage(thread),
        "time.thread_time_ns()": time.thread_time_ns,
        "_C.now_ns()": _C.now_ns,
        "empty call": lambda: None,
    }
    results = {name: [] for name in candidates}
    for _ in range(args.repeats):
        meter = RunMeter()  # fresh each repeat: its list grows by one tuple per read
        candidates["RunMeter.read() (one per run)"] = meter.read
        for name, function in candidates.items():
            results[name].append(_per_call(function, args.calls))
    empty = float(np.median(results["empty call"]))
    print(describe_machine())
    print(f"median of {args.repeats} repeats x {args.calls} calls, empty call "
          f"({empty:.0f} ns) subtracted")
    for name, values in results.items():
        if name != "empty call":
            print(f"{name:<36} {np.median(values) - empty:8.0f} ns/call")


if __name__ == "__main__":
    main()
