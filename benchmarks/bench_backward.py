"""Cost per backward node: the backward of a chain of N cheap autograd nodes (x * 1.0 on a
one-element tensor) run five ways, interleaved, medians: plain eager autograd; eager with
pyfxprof's per-node pre-hooks (one native mark each: the fallback mechanism); the chain's graph
through AOTAutograd untimed; the same with pyfxprof's timed aten graphs (what
profile(backward=True) runs); eager under torch.profiler.

Run: .venv/bin/python benchmarks/bench_backward.py [--nodes N] [--repeats R]
"""

import argparse
import statistics
import time

import torch
import torch.fx as fx

from machine import describe_machine

WAYS = ("plain", "pre-hooks", "aot plain", "aot timed", "torch.profiler")


def chain_of(value: torch.Tensor, nodes: int) -> torch.Tensor:
    """`value` multiplied by 1.0 `nodes` times, summed: a backward of `nodes` MulBackward0
    nodes, a SumBackward0 and an AccumulateGrad."""
    for _ in range(nodes):
        value = value * 1.0
    return value.sum()


def aot_chains(nodes: int, runs: int):
    """(untimed, timed) forward functions of the chain compiled by AOTAutograd."""
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified
    from pyfxprof.timing.aot_backward import AotStep

    class Chain(torch.nn.Module):
        def forward(self, x):
            return (chain_of(x, nodes),)
    gm = fx.symbolic_trace(Chain())
    leaf = torch.ones(1, requires_grad=True)
    plain = aot_module_simplified(gm, [leaf], fw_compiler=lambda g, _: make_boxed_func(g.forward),
                                  bw_compiler=lambda g, _: make_boxed_func(g.forward))
    timed = AotStep(gm, (leaf,), nodes + 1, "codegen")
    timed.reset(runs)
    timed.run((leaf,))[0].backward()  # compiles the backward graph
    timed.reset(runs)
    return (lambda x: plain(x)[0]), (lambda x: timed.run((x,))[0])


def backward_ns(nodes: int, how: str, compiled) -> int:
    """ns of one backward of the chain, run `how` (one of WAYS)."""
    from pyfxprof.timing.backward import autograd_nodes, mark_hook
    leaf = torch.ones(1, requires_grad=True)
    loss = compiled[how](leaf) if how in compiled else chain_of(leaf, nodes)
    if how == "pre-hooks":
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
    plain, timed = aot_chains(options.nodes, options.repeats + 10)
    compiled = {"aot plain": plain, "aot timed": timed}
    times: dict[str, list[int]] = {how: [] for how in WAYS}
    for _ in range(3):
        for how in WAYS:
            backward_ns(options.nodes, how, compiled)  # warm up each way
    for _ in range(options.repeats):
        for how in WAYS:
            times[how].append(backward_ns(options.nodes, how, compiled))
        RECORDER.start()  # drain the marks (ids never handed out are dropped)
    print(describe_machine())
    per_node = options.nodes + 2
    lower = {how: statistics.quantiles(times[how], n=4)[0] for how in WAYS}
    print("ns per node: median, IQR, median and lower quartile over plain and over aot plain")
    for how in WAYS:
        median = statistics.median(times[how])
        quartiles = statistics.quantiles(times[how], n=4)
        over = [(median - statistics.median(times[base])) / per_node for base in
                ("plain", "aot plain")]
        over_q1 = [(lower[how] - lower[base]) / per_node for base in ("plain", "aot plain")]
        print(f"{how:15s} {median / per_node:7.0f}  IQR {(quartiles[2] - quartiles[0]) / per_node:6.0f}"
              f"  plain {over[0]:+6.0f} (Q1 {over_q1[0]:+6.0f})"
              f"  aot plain {over[1]:+6.0f} (Q1 {over_q1[1]:+6.0f})")


if __name__ == "__main__":
    main()
