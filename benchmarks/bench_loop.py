"""What the Profiler loop adds to each call of a model: plain calls and calls inside an open
``pyfxprof.Profiler`` block (recording), interleaved, on a one-node model (`x + 1`), a
300-node chain of `x + 1` and a tiny GPT-2 decode step (one token on an 8-token cache, the
cache cropped back after each call).

Each call is timed alone (one clock read before and after it), so the median per call of a
block is not moved by a preempted call, and the Profiler's start/stop (capture, window
collection) stays outside. A round is a plain block then a profiled block of the same model;
the added time per call is the median over rounds of (profiled median - plain median), with
its quartiles; the added time per node is the 300-node chain's figure minus the one-node
model's, over the 299 further nodes, paired per round; beside it the same figure for the
group's codegen executor run alone (what pyfxprof.profile() runs per timed run), in the
same rounds.

Run: .venv/bin/python benchmarks/bench_loop.py [--rounds R] [--calls N] [--only NAME]
"""

import argparse
import statistics
import warnings

import numpy as np
import torch
from machine import describe_machine

import pyfxprof
from pyfxprof import _C


class PlusOne(torch.nn.Module):
    """One node: `x + 1`."""

    def forward(self, x):
        return x + 1


class PlusOneChain(torch.nn.Module):
    """`nodes` nodes: `x + 1` repeated (torch.fx unrolls the loop)."""

    def __init__(self, nodes: int = 300) -> None:
        super().__init__()
        self.nodes = nodes

    def forward(self, x):
        for _ in range(self.nodes):
            x = x + 1
        return x


def gpt2_decode():
    """(a tiny GPT-2, a function making one decode call, what to do after each call)."""
    import transformers
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100,
                                     n_positions=64, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    cache = transformers.DynamicCache(config=config)
    model(torch.randint(1, 100, (1, 8)), past_key_values=cache, use_cache=True)
    token = torch.randint(1, 100, (1, 1))
    return model, lambda: model(token, past_key_values=cache, use_cache=True), \
        lambda: cache.crop(-1)


def tensor_workload(model: torch.nn.Module):
    x = torch.zeros(1)
    return model, lambda: model(x), None


WORKLOADS = {"one node": lambda: tensor_workload(PlusOne()),
             "300 nodes": lambda: tensor_workload(PlusOneChain(300)),
             "GPT-2 decode": gpt2_decode}


def block_medians(call, after, calls: int) -> float:
    """Median ns of `calls` calls, each timed alone (`after` runs untimed after each)."""
    times = np.empty(calls, dtype=np.int64)
    for k in range(calls):
        started = _C.now_ns()
        call()
        times[k] = _C.now_ns() - started
        if after is not None:
            after()
    return float(np.median(times))


def measure(name: str, rounds: int, calls: int) -> tuple[list[float], ...]:
    """(plain medians, profiled medians, codegen executor medians or []) per round: the
    last is the group's executor run alone, as pyfxprof.profile() runs it (fx captures)."""
    model, call, after = WORKLOADS[name]()
    profiler = pyfxprof.Profiler(model, keep_profiles=1)
    with profiler:  # the capture, outside every timed block
        call()
    group = next(iter(profiler._groups.values()))
    graph = getattr(group, "graph_run", group.capture.frame is None and not group.hooks)
    executor = group.executor if graph else None  # (getattr: also runs on older checkouts)
    plain, profiled, alone = [], [], []
    for _ in range(rounds):
        plain.append(block_medians(call, after, calls))
        profiler.start()
        profiled.append(block_medians(call, after, calls))
        profiler.stop()
        if executor is not None:
            x = torch.zeros(1)
            alone.append(block_medians(lambda: executor.run((x,)), None, calls))
            executor.reset()
    print(f"  {name}: capture {group.capture.mode}, {len(group.frame)} nodes")
    return plain, profiled, alone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--only", choices=sorted(WORKLOADS))
    options = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(describe_machine())
    found = {}
    with torch.inference_mode():
        for name in [options.only] if options.only else WORKLOADS:
            found[name] = measure(name, options.rounds, options.calls)
    print(describe_machine())
    print(f"{'workload':14s} {'plain/call':>11s} {'added/call':>11s} {'quartiles':>20s}  ratio")
    for name, (plain, profiled, _) in found.items():
        added = np.subtract(profiled, plain)
        q1, q3 = np.percentile(added, [25, 75])
        base = statistics.median(plain)
        print(f"{name:14s} {base:9.0f} ns {np.median(added):8.0f} ns "
              f"{q1:9.0f} .. {q3:7.0f} ns  {statistics.median(profiled) / base:5.2f}x")
    if "one node" in found and "300 nodes" in found:
        one, chain = found["one node"], found["300 nodes"]
        for label, k in (("the Profiler loop", 1), ("the codegen executor alone", 2)):
            per_node = (np.subtract(chain[k], chain[0]) - np.subtract(one[k], one[0])) / 299
            q1, q3 = np.percentile(per_node, [25, 75])
            print(f"added per node beyond the first, {label}: {np.median(per_node):.0f} ns "
                  f"(quartiles {q1:.0f} .. {q3:.0f} ns over {len(per_node)} rounds)")


if __name__ == "__main__":
    main()
