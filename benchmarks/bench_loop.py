"""What the Profiler loop adds to each call of a model, from calls paired one by one: a model
inside an open ``pyfxprof.Profiler`` block (recording) and an identical twin outside it,
called alternately. Workloads: a one-node model (`x + 1`); 300-node chains of `x + 1` and
of `x.flatten()` (about ten times cheaper per node, so per-call noise, which grows with a
call's time, hides less), both written out as the graph runs them (no Python loop in the
plain call either); a tiny GPT-2 decode step (one token on an 8-token cache, each model's
cache cropped back after each call).

Every call is timed alone (one clock read before and after it) and paired with the twin's
call next to it, so drifts of the machine between calls cancel and a preempted call moves
one pair. The order of the calls in a pair (a triplet, a quadruplet) is drawn at random
each time: a call's time depends on the call before it (caches, branch predictors), and a
fixed or rotating order gives each kind the same predecessors, a bias of ~20 ns per node
on the `x + 1` chain measured between two identical plain twins. A round is a block of
pairs of each workload in turn; the Profiler's start/stop (window collection) stays
outside the blocks.

- Added per call: the median of (profiled - plain) over the pairs, with the sign test's
  95% interval (pyfxprof.tools.overhead.paired_estimate).
- Added per node beyond the first: (a chain's added time - the one-node model's) / 299,
  over pairs matched by their place in the round, with its interval; beside it the same
  figure for the group's codegen executor run alone (what pyfxprof.profile() runs per
  timed run), and for a second plain twin (the measurement's own bias: two identical
  models; it should read "not resolved"), timed in the same pairs (quadruplets).
- Each figure is checked against issue 24's target (<= 5 µs per call of the one-node
  model, <= 80 ns per node): "met" / "not met" when the interval lies on one side of it,
  "not resolved" when the interval holds it.

Run: .venv/bin/python benchmarks/bench_loop.py [--rounds R] [--calls N] [--only NAME ...]
"""

import argparse
import copy
import warnings

import numpy as np
import torch
import torch.fx as fx
from machine import describe_machine

import pyfxprof
from pyfxprof import _C
from pyfxprof.data.units import format_ns
from pyfxprof.timing.executors import CodegenExecutor
from pyfxprof.tools.overhead import Estimate, paired_estimate

#: Issue 24's targets: added ns per call of the one-node model, per node beyond the first.
TARGET_PER_CALL_NS, TARGET_PER_NODE_NS = 5_000, 80


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


class FlattenChain(PlusOneChain):
    """`nodes` nodes: `x.flatten()` repeated, a tensor method ~10x cheaper than `x + 1` on
    one element (no new storage), so per-call noise, which grows with the call's time, hides
    less of a per-node cost. (A method: the plain code looks it up on `x` per node as the
    timed call does; `torch.flatten(x)` would look up `torch.flatten` in the plain code
    only, which the timed call holds already.)"""

    def forward(self, x):
        for _ in range(self.nodes):
            x = x.flatten()
        return x


class Unrolled(torch.nn.Module):
    """`chain`'s forward as torch.fx writes it out (a statement per node, no Python loop), so
    the plain call runs the code the Profiler's graph runs, without the loop's own time."""

    def __init__(self, chain: torch.nn.Module) -> None:
        super().__init__()
        self.code = fx.symbolic_trace(chain)

    def forward(self, x):
        return self.code.forward(x)


def gpt2_decode():
    """(a tiny GPT-2, its call, what to do after each call) for one model of the pair."""
    import transformers
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100,
                                     n_positions=64, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    prompt, token = torch.randint(1, 100, (1, 8)), torch.randint(1, 100, (1, 1))

    def decoder(model):
        cache = transformers.DynamicCache(config=config)
        model(prompt, past_key_values=cache, use_cache=True)
        return (lambda: model(token, past_key_values=cache, use_cache=True),
                lambda: cache.crop(-1))
    return model, decoder


def tensor_workload(model: torch.nn.Module):
    x = torch.zeros(1)
    return model, lambda model: (lambda: model(x), None)


WORKLOADS = {"one node": lambda: tensor_workload(PlusOne()),
             "300 nodes": lambda: tensor_workload(Unrolled(PlusOneChain(300))),
             "300 flattens": lambda: tensor_workload(Unrolled(FlattenChain(300))),
             "GPT-2 decode": gpt2_decode}
#: The chains whose added time per node beyond the first is reported.
CHAINS = ("300 nodes", "300 flattens")


class Workload:
    """A profiled model and its plain twin, with their calls; for an fx graph taking the
    call as it is, also the group's codegen executor run alone."""

    def __init__(self, name: str) -> None:
        model, make = WORKLOADS[name]()
        self.name, self.profiler = name, pyfxprof.Profiler(model, keep_profiles=1)
        self.profiled, self.after_profiled = make(model)
        self.plain, self.after_plain = make(copy.deepcopy(model))
        with self.profiler:  # the capture, outside every timed block
            self.profiled()
        group = next(iter(self.profiler._groups.values()))
        self.describe = f"capture {group.capture.mode}, {len(group.frame)} nodes"
        self.executor = self.alone = self.twin = None
        if group.capture.mode == "fx":
            self.executor = CodegenExecutor(group.capture.graph_module, len(group.frame))
            x = torch.zeros(1)
            self.alone = lambda: self.executor.run((x,))
            self.twin, _ = make(copy.deepcopy(model))
        self.order = np.random.default_rng(0)
        self.times: dict[str, list] = {"profiled": [], "plain": [], "alone": [], "twin": []}

    def block(self, calls: int) -> None:
        """`calls` pairs (quadruplets with the executor alone and the plain model's second
        twin), timed call by call, in an order drawn at random each time."""
        kinds = [("profiled", self.profiled, self.after_profiled),
                 ("plain", self.plain, self.after_plain)]
        if self.alone is not None:
            kinds += [("alone", self.alone, None), ("twin", self.twin, None)]
        times = np.empty((len(kinds), calls), dtype=np.int64)
        # drawn before the block: no numpy code runs between the timed calls
        orders = [[kinds[which] + (which,) for which in self.order.permutation(len(kinds))]
                  for _ in range(calls)]
        self.profiler.start()
        for k in range(calls):
            for _, call, after, which in orders[k]:
                started = _C.now_ns()
                call()
                times[which, k] = _C.now_ns() - started
                if after is not None:
                    after()
        self.profiler.stop()
        if self.executor is not None:
            self.executor.reset()
        for (kind, _, _), row in zip(kinds, times):
            self.times[kind].append(row)

    def series(self, kind: str) -> np.ndarray:
        return np.concatenate(self.times[kind])


def verdict(estimate: Estimate, target: float) -> str:
    """Whether the interval lies at or below the target, above it, or holds it."""
    if estimate.low is None or estimate.high is None:
        return "not resolved (too few pairs)"
    if estimate.high <= target:
        return f"<= {format_ns(target)}: met"
    if estimate.low > target:
        return f"<= {format_ns(target)}: not met"
    return f"<= {format_ns(target)}: not resolved (the interval holds it)"


def report(found: dict[str, Workload]) -> None:
    print(f"{'workload':14s} {'plain/call':>10s}  added/call [95% interval] over pairs")
    for name, work in found.items():
        plain = work.series("plain")
        added = paired_estimate(plain, work.series("profiled"))
        check = f"  {verdict(added, TARGET_PER_CALL_NS)}" if name == "one node" else ""
        print(f"{name:14s} {format_ns(np.median(plain)):>10s}  {added.text()} over "
              f"{len(plain)} pairs{check}")
    for chain_name in [name for name in CHAINS if name in found and "one node" in found]:
        one, chain = found["one node"], found[chain_name]
        for label, kind in (("the Profiler loop", "profiled"),
                            ("the codegen executor alone", "alone"),
                            ("a second plain twin (bias check)", "twin")):
            one_added = one.series(kind) - one.series("plain")
            chain_added = chain.series(kind) - chain.series("plain")
            per_node = paired_estimate(one_added, chain_added).scaled(299)
            check = "" if kind == "twin" else f" — {verdict(per_node, TARGET_PER_NODE_NS)}"
            print(f"added per node beyond the first ({chain_name}), {label}: "
                  f"{per_node.text()}{check}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50, help="pairs per workload and round")
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append",
                        help="these workloads only (repeat the option for several)")
    options = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(describe_machine())
    with torch.inference_mode():
        found = {name: Workload(name) for name in options.only or WORKLOADS}
        for work in found.values():
            print(f"  {work.name}: {work.describe}")
        for _ in range(options.rounds):
            for work in found.values():
                work.block(options.calls)
    print(describe_machine())
    report(found)


if __name__ == "__main__":
    main()
