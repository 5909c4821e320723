"""What a whole `pyfxprof.profile()` call adds per node in each timed run, its per-run work
included (the noise meter's read, the progress update, the run's own marks): each run's wall time
as profile() itself records it (`Profile.run_noise`, the clock read between consecutive runs)
against the plain graph's runs timed the same way (one clock read between runs), in rounds of
a plain block, one profile() call and another plain block. The added time per node is the
median over rounds of (profile()'s median run - the two plain blocks' median run) / nodes:
paired within a round and bracketed by plain runs, so the VM's drifts cancel, and medians over
runs, so a preempted run does not count. Capture,
calibration and warm-up are outside the timed loop and outside this figure.

Run: .venv/bin/python benchmarks/bench_profile_loop.py [--rounds N] [--runs R] [--workload W]
"""

import argparse
import gc
import statistics

import numpy as np
import torch
from machine import describe_machine
from workloads import tensor_add_chain, tensor_plus_one_chain

import pyfxprof
from pyfxprof import _C

WORKLOADS = {"plus_one": tensor_plus_one_chain, "torch_add": lambda: tensor_add_chain(300)}


def plain_run_walls(gm, inputs: tuple, runs: int) -> np.ndarray:
    """Wall ns of each of `runs` plain calls, one clock read between consecutive calls."""
    reads = [0] * (runs + 1)
    reads[0] = _C.now_ns()
    for k in range(1, runs + 1):
        gm(*inputs)
        reads[k] = _C.now_ns()
    return np.diff(np.asarray(reads, dtype=np.int64))


def profiled_run_walls(gm, inputs: tuple, runs: int, warmup: int) -> np.ndarray:
    """Wall ns of each timed run of one profile() call, as the profile recorded them."""
    prof = pyfxprof.profile(gm, inputs, runs=runs, warmup=warmup, progress=False)
    if prof.run_noise is None:
        raise SystemExit("this platform has no per-run noise meter (needs getrusage per thread)")
    return prof.run_noise[:, 3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--runs", type=int, default=200, help="timed runs per block and profile")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="plus_one")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(describe_machine())
    gm, inputs = WORKLOADS[args.workload]()
    nodes = len([n for n in gm.graph.nodes if n.op not in ("placeholder", "output")])
    added, plain_medians = [], []
    with torch.inference_mode():
        profiled_run_walls(gm, inputs, 5, 1)  # first capture, lazy imports: not measured
        for _ in range(args.rounds):
            gc.collect()
            before = plain_run_walls(gm, inputs, args.runs + args.warmup)[args.warmup:]
            profiled = np.median(profiled_run_walls(gm, inputs, args.runs, args.warmup))
            after = plain_run_walls(gm, inputs, args.runs)
            plain = np.median(np.concatenate([before, after]))
            plain_medians.append(plain)
            added.append((profiled - plain) / nodes)
    print(f"{args.workload}: {nodes} nodes, plain run median {statistics.median(plain_medians) / 1e3:.1f} µs "
          f"(rounds {min(plain_medians) / 1e3:.1f}-{max(plain_medians) / 1e3:.1f} µs)")
    print("profile() added per node, by round: " + " ".join(f"{a:.0f}" for a in added) + " ns")
    print(f"median of {args.rounds} rounds: {statistics.median(added):.0f} ns per node "
          f"(quartiles {np.percentile(added, 25):.0f} to {np.percentile(added, 75):.0f} ns)")


if __name__ == "__main__":
    main()
