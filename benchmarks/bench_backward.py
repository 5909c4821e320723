"""Cost per backward node: the backward of a chain of N cheap autograd nodes (x * 1.0 on a
one-element tensor) run five ways, interleaved, medians: plain eager autograd; eager with
pyfxprof's per-node pre-hooks (one native mark each: the fallback mechanism); the chain's graph
through AOTAutograd untimed (FX's generated code, which looks each op up through torch.ops);
the same with pyfxprof's timed aten graphs (what profile(backward=True) runs); eager under
torch.profiler. Chains of N and 4N nodes: the slope between them is the cost per node, apart
from a per-step fixed cost (AOTAutograd's wrapper around the backward graph).

Run: .venv/bin/python benchmarks/bench_backward.py [--nodes N] [--repeats R] [--clock cpu]
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


def backward_ns(nodes: int, how: str, compiled, clock=time.perf_counter_ns) -> int:
    """ns of one backward of the chain, run `how` (one of WAYS), on `clock` (wall time, or
    the thread's CPU time, which the other jobs of a loaded machine do not add to: the
    autograd engine runs a CPU backward on the calling thread)."""
    from pyfxprof.timing.backward import autograd_nodes, mark_hook
    leaf = torch.ones(1, requires_grad=True)
    loss = compiled[how](leaf) if how in compiled else chain_of(leaf, nodes)
    if how == "pre-hooks":
        for i, node in enumerate(autograd_nodes(loss.grad_fn)):
            node.register_prehook(mark_hook(1 + i))
    if how == "torch.profiler":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            started = clock()
            loss.backward()
            return clock() - started
    started = clock()
    loss.backward()
    return clock() - started


def medians(nodes: int, repeats: int, clock) -> dict[str, float]:
    """Median ns of the chain's backward of `nodes` nodes, each way, interleaved."""
    from pyfxprof.timing.recorder import RECORDER
    plain, timed = aot_chains(nodes, repeats + 10)
    compiled = {"aot plain": plain, "aot timed": timed}
    times: dict[str, list[int]] = {how: [] for how in WAYS}
    for _ in range(3):
        for how in WAYS:
            backward_ns(nodes, how, compiled, clock)  # warm up each way
    for _ in range(repeats):
        for how in WAYS:
            times[how].append(backward_ns(nodes, how, compiled, clock))
        RECORDER.start()  # drain the marks (ids never handed out are dropped)
    return {how: statistics.median(times[how]) for how in WAYS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or the thread's CPU time (steadier under load)")
    options = parser.parse_args()
    torch.set_num_threads(1)
    clock = time.perf_counter_ns if options.clock == "wall" else time.thread_time_ns
    short, long = options.nodes, 4 * options.nodes
    at_short = medians(short, options.repeats, clock)
    at_long = medians(long, options.repeats, clock)
    print(describe_machine())
    print(f"{options.clock} time; medians at {short} / {long} nodes; over plain eager "
          f"autograd: per node at {short} nodes; per "
          f"node from {short} to {long} nodes (the slope: the per-step fixed cost left out); "
          "that fixed cost")
    for how in WAYS:
        added_short = at_short[how] - at_short["plain"]
        slope = ((at_long[how] - at_long["plain"]) - added_short) / (long - short)
        print(f"{how:15s} {at_short[how] / 1e3:8.1f} / {at_long[how] / 1e3:8.1f} us  "
              f"+{added_short / (short + 2):6.0f} ns/node at {short}  "
              f"slope {slope:+6.0f} ns/node  fixed {(added_short - slope * (short + 2)) / 1e3:+8.1f} us")


if __name__ == "__main__":
    main()
