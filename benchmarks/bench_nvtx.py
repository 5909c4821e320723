"""NVTX ranges' host cost: a graph's instrumented run with NVTX ranges off and on (no tool
attached, as in a run outside Nsight), interleaved in one process, as added ns per node with a
95% interval of the difference of medians (bootstrap over blocks). ``--tool PATH`` attaches an
NVTX tool (NVTX_INJECTION64_PATH) to a second measurement in a child process, e.g. the fake
tool the tests build, which records every range in memory (an upper bound of a light tool).

Run: .venv/bin/python benchmarks/bench_nvtx.py [--runs N] [--tool PATH]
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import torch
from machine import describe_machine
from workloads import tensor_add_chain, tensor_plus_one_chain

from pyfxprof.capture.tracing import timed_nodes
from pyfxprof.timing.executors import CodegenExecutor
from pyfxprof.timing.native import _C

BLOCK = 10


def run_ns(executor: CodegenExecutor, args: tuple, runs: int) -> list[int]:
    """Wall ns of each of `runs` instrumented runs."""
    out = []
    for _ in range(runs):
        started = time.perf_counter_ns()
        executor.run(args)
        out.append(time.perf_counter_ns() - started)
    executor.reset()
    return out


def compare(name: str, gm, args: tuple, runs: int) -> None:
    n = len(timed_nodes(gm.graph))
    with torch.inference_mode():
        off, on = CodegenExecutor(gm, n), CodegenExecutor(gm, n)
        on.table.native.set_ranges([f"node {k}" for k in range(n)])
        samples = {"ranges off": [], "ranges on": []}
        for block in range(runs // BLOCK):
            order = [("ranges off", off), ("ranges on", on)][:: 1 if block % 2 else -1]
            for label, executor in order:
                samples[label].append(run_ns(executor, args, BLOCK))
    blocks = {k: np.asarray(v) for k, v in samples.items()}
    medians = {k: float(np.median(v)) for k, v in blocks.items()}
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(blocks["ranges on"]), (2000, len(blocks["ranges on"])))
    diffs = [(np.median(blocks["ranges on"][p]) - np.median(blocks["ranges off"][p])) / n
             for p in picks]
    low, high = np.percentile(diffs, [2.5, 97.5])
    print(f"{name}: {n} nodes, {runs} runs per setting in alternating blocks of {BLOCK}: "
          f"off {medians['ranges off'] / 1e3:.1f} µs, on {medians['ranges on'] / 1e3:.1f} µs "
          f"per run; added {(medians['ranges on'] - medians['ranges off']) / n:+.1f} ns/node "
          f"[{low:+.1f}, {high:+.1f}]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--tool", help="an NVTX injection library to attach in a child run")
    args = parser.parse_args()
    if not _C.nvtx_built:
        print("pyfxprof._C was built without NVTX headers: nothing to measure")
        return 0
    tool = os.environ.get("NVTX_INJECTION64_PATH")
    print(describe_machine(), "·", f"NVTX tool: {tool or 'none attached'}")
    compare("x + 1 chain", *tensor_plus_one_chain(300), args.runs)
    compare("torch.add chain", *tensor_add_chain(300), args.runs)
    if args.tool and not tool:
        env = dict(os.environ, NVTX_INJECTION64_PATH=os.path.abspath(args.tool))
        return subprocess.run([sys.executable, *sys.argv[:1], "--runs", str(args.runs)],
                              env=env).returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
