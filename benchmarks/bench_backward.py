"""Cost per backward node: the backward of a chain of N cheap autograd nodes (x * 1.0 on a
one-element tensor) plain, with pyfxprof's per-node pre-hooks (one native mark each, as
profile(backward=True) registers them) and under torch.profiler; interleaved, medians.

Run: .venv/bin/python benchmarks/bench_backward.py [--nodes N] [--repeats R]
"""

import argparse
import statistics
import time

import torch

from machine import describe_machine


def chain(nodes: int) -> torch.Tensor:
    """A scalar whose backward runs `nodes` MulBackward0 nodes, a SumBackward0 and an
    AccumulateGrad."""
    value = torch.ones(1, requires_grad=True)
    for _ in range(nodes):
        value = value * 1.0
    return value.sum()


def backward_ns(nodes: int, how: str) -> int:
    """ns of one backward of the chain: "plain", "pyfxprof" (pre-hooks) or "torch.profiler"."""
    from pyfxprof.timing.backward import autograd_nodes, mark_hook
    loss = chain(nodes)
    if how == "pyfxprof":
        for i, node in enumerate(autograd_nodes(loss.grad_fn)):
            node.register_prehook(mark_hook(1 + i))
    if how == "torch.profiler":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            started = time.perf_counter_ns()
            loss.backward()
            return time.perf_counter_ns() - started
    started = time.perf_counter_ns()
    loss.backward()
    return time.perf_counter_ns() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=41)
    options = parser.parse_args()
    from pyfxprof.timing.recorder import RECORDER
    torch.set_num_threads(1)
    ways = ("plain", "pyfxprof", "torch.profiler")
    times: dict[str, list[int]] = {how: [] for how in ways}
    for _ in range(3):
        for how in ways:
            backward_ns(options.nodes, how)  # warm up each way
    for _ in range(options.repeats):
        for how in ways:
            times[how].append(backward_ns(options.nodes, how))
        RECORDER.start()  # drain the marks (ids never handed out are dropped)
    print(describe_machine())
    base = statistics.median(times["plain"])
    per_node = options.nodes + 2
    for how in ways:
        median = statistics.median(times[how])
        quartiles = statistics.quantiles(times[how], n=4)
        print(f"{how:15s} {median / per_node:8.0f} ns/node  +{(median - base) / per_node:6.0f} "
              f"ns/node over plain  (IQR {(quartiles[2] - quartiles[0]) / per_node:.0f} ns/node)")


if __name__ == "__main__":
    main()
