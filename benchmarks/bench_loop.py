"""What the Profiler loop adds to each call of a model, from calls paired one by one: a model
inside an open ``pyfxprof.Profiler`` block (recording) and an identical twin outside it,
called alternately; beside them, in the same groups, the twin under
``torch.compile(backend="eager")`` (what torch.compile itself adds to a call: Dynamo's guard
check, its generated code, its wrappers; the loop runs the same guards and code) and a copy
inside a second Profiler whose schedule never records (a NONE step: the Profiler's forward
wrapper alone). Workloads: a one-node model (`x + 1`); one `nn.Linear`; a 10-node chain
(five Linear + ReLU); a tiny ResNet-like block stack; 300-node chains of `x + 1` and of
`x.flatten()` (about ten times cheaper per node, so per-call noise, which grows with a
call's time, hides less), both written out as the graph runs them (no Python loop in the
plain call either); a tiny GPT-2 decode step (one token on an 8-token cache, each model's
cache cropped back after each call); a `Linear` plus the mean of a second input (whose
dynamic length the loop notes per call).

Every call is timed alone (one clock read before and after it) and paired with the twin's
call next to it, so drifts of the machine between calls cancel and a preempted call moves
one pair. A call's time depends on the calls before it (caches, branch predictors): the
profiled call runs the Profiler's generated code where the plain call runs the model's own,
and each evicts the other's. So every figure is given for two orders of the calls:

- **in a loop**: each model is called ``--streak`` times in a row (4 by default), as a
  serving loop calls it; the first call of each streak follows the other model's and is
  dropped; the models' streaks come in an order drawn at random each time;
- **after the other model**: one call of each model at a time, in an order drawn at random
  each time (a fixed or rotating order gives each kind the same predecessors, a bias of
  ~20 ns per node on the `x + 1` chain measured between two identical plain twins).

A round is a block of groups of each workload in turn (both orders); the Profiler's
start/stop (window collection) stays outside the blocks.

- Added per call: the median of (profiled - plain) over the pairs, with the sign test's
  95% interval (pyfxprof.tools.overhead.paired_estimate); the same for torch.compile's call
  and for the NONE step, and the loop's cost beyond torch.compile's, (profiled - compiled)
  (DESIGN.md's budget: <= 5 µs per call beyond the guard check torch.compile pays).
- Added per node beyond the first: (a chain's added time - the one-node model's) / 299,
  over pairs matched by their place in the round, with its interval; beside it the same
  figure for the group's codegen executor run alone (what pyfxprof.profile() runs per
  timed run), and for a second plain twin (the measurement's own bias: two identical
  models; it should read "not resolved"), timed in the same groups.
- Each figure is checked against issue 24's targets (<= 5 µs per call of the one-node
  model, <= 80 ns per node) and the loop beyond torch.compile against <= 5 µs per call
  (every workload): "met" / "not met" when the interval lies on one side of it, "not
  resolved" when the interval holds it.
- Per-call medians with quartiles of each kind's calls are printed too (wall time: on a
  loaded machine they include preemptions, which the paired medians mostly cancel).

Run: .venv/bin/python benchmarks/bench_loop.py [--rounds R] [--calls N] [--streak S]
     [--only NAME ...]
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


class TinyResNet(torch.nn.Module):
    """Two residual blocks (conv, batch norm, ReLU) on an 8-channel 8x8 image."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(
            torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU())
            for _ in range(2))

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = x + block(x)
        return x


class WithMemory(torch.nn.Module):
    """A `Linear` on `x` plus the mean of a memory `mem` over its length: the loop captures
    every tensor but the first with dynamic sizes, so its graph takes the memory's length as
    a size input, which the loop notes at each recorded call (the shapes each call ran at,
    for Profile.replay)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x, mem):
        return self.fc(x) + mem.mean(1)


def memory_workload():
    """Each model gets its own tensors: the loop's capture marks the memory it was called
    with as dynamic (Dynamo's marking), which torch.compile's twin would then be given."""
    def make(model):
        x, mem = torch.zeros(4, 16), torch.zeros(4, 8, 16)
        return lambda: model(x, mem), None
    return WithMemory().eval(), make


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


def tensor_workload(model: torch.nn.Module, *shape: int):
    x = torch.zeros(shape or (1,))
    return model.eval(), lambda model: (lambda: model(x), None)


def linear_chain(pairs: int) -> torch.nn.Module:
    """`pairs` Linear + ReLU pairs (2 * pairs nodes), 16 wide."""
    return torch.nn.Sequential(*(layer for _ in range(pairs)
                                 for layer in (torch.nn.Linear(16, 16), torch.nn.ReLU())))


WORKLOADS = {"one node": lambda: tensor_workload(PlusOne()),
             "Linear": lambda: tensor_workload(torch.nn.Linear(16, 16), 4, 16),
             "10 nodes": lambda: tensor_workload(linear_chain(5), 4, 16),
             "tiny ResNet": lambda: tensor_workload(TinyResNet(), 1, 3, 8, 8),
             "300 nodes": lambda: tensor_workload(Unrolled(PlusOneChain(300))),
             "300 flattens": lambda: tensor_workload(Unrolled(FlattenChain(300))),
             "GPT-2 decode": gpt2_decode,
             "Linear + memory": memory_workload}
#: The chains whose added time per node beyond the first is reported.
CHAINS = ("300 nodes", "300 flattens")


class Workload:
    """A profiled model and its plain twin, with their calls; for an fx graph taking the
    call as it is, also the group's codegen executor run alone."""

    def __init__(self, name: str) -> None:
        model, self.make = WORKLOADS[name]()
        self.pristine = copy.deepcopy(model)  # what the twins are copied from
        self.name, self.profiler = name, pyfxprof.Profiler(model, keep_profiles=1)
        self.profiled, self.after_profiled = self.make(model)
        self.new_twins()
        # torch.compile's twin and the NONE step's copy, kept for the whole run (a fresh
        # compiled copy per block would recompile, up to Dynamo's recompile limit)
        compiled_model = torch.compile(copy.deepcopy(self.pristine), backend="eager")
        self.compiled, self.after_compiled = self.make(compiled_model)
        never_model = copy.deepcopy(self.pristine)
        self.never = pyfxprof.Profiler(never_model, schedule=lambda step: NONE)
        self.none, self.after_none = self.make(never_model)
        self.compiled()  # Dynamo's compilation, outside every timed block
        with self.profiler, self.never:  # the captures, outside every timed block
            self.profiled()
            self.none()
        group = next(iter(self.profiler._groups.values()), None)
        if group is None:  # the loop refused the call: it runs the model itself, unprofiled
            why = "; ".join(sorted(set(self.profiler._uncaptured.values()))) or "no call group"
            self.describe = f"not captured ({why}): the loop's cost on a call it passes on"
        else:
            self.describe = f"capture {group.capture.mode}, {len(group.frame)} nodes"
        self.executor = self.alone = self.twin = None
        if group is not None and group.capture.mode == "fx":
            self.executor = CodegenExecutor(group.capture.graph_module, len(group.frame))
            x = torch.zeros(1)
            self.alone = lambda: self.executor.run((x,))
        self.order = np.random.default_rng(0)
        # times[in a loop?][kind]: the kept calls' times, block by block
        self.times = {in_loop: {kind: [] for kind in KINDS} for in_loop in (True, False)}

    def new_twins(self) -> None:
        """Fresh plain twins for each block: two copies of one model can differ in speed by
        where their code and data landed in memory (~20 ns per node on the `x + 1` chain
        between two twins kept for a whole run); fresh copies turn that into noise the
        intervals hold."""
        self.plain, self.after_plain = self.make(copy.deepcopy(self.pristine))
        self.twin, _ = self.make(copy.deepcopy(self.pristine))

    def block(self, calls: int, streak: int) -> None:
        """`calls` groups of one call per model (streak 1) or of `streak` calls per model,
        the first of each streak dropped; each call timed alone, the order of the models in
        a group drawn at random each time."""
        self.new_twins()
        kinds = [("profiled", self.profiled, self.after_profiled),
                 ("plain", self.plain, self.after_plain),
                 ("compiled", self.compiled, self.after_compiled),
                 ("none", self.none, self.after_none)]
        if self.alone is not None:
            kinds += [("alone", self.alone, None), ("twin", self.twin, None)]
        times = np.empty((len(kinds), calls, streak), dtype=np.int64)
        # drawn before the block: no numpy code runs between the timed calls
        orders = [self.order.permutation(len(kinds)).tolist() for _ in range(calls)]
        self.profiler.start()
        self.never.start()
        for k in range(calls):
            for which in orders[k]:
                _, call, after = kinds[which]
                slots = times[which, k]
                for j in range(streak):
                    started = _C.now_ns()
                    call()
                    slots[j] = _C.now_ns() - started
                    if after is not None:
                        after()
        self.never.stop()
        self.profiler.stop()
        if self.executor is not None:
            self.executor.reset()
        kept = times[:, :, 1:] if streak > 1 else times
        for (kind, _, _), row in zip(kinds, kept):
            self.times[streak > 1][kind].append(row.reshape(-1))

    def series(self, in_loop: bool, kind: str) -> np.ndarray:
        return np.concatenate(self.times[in_loop][kind])


def verdict(estimate: Estimate, target: float) -> str:
    """Whether the interval lies at or below the target, above it, or holds it."""
    if estimate.low is None or estimate.high is None:
        return "not resolved (too few pairs)"
    if estimate.high <= target:
        return f"<= {format_ns(target)}: met"
    if estimate.low > target:
        return f"<= {format_ns(target)}: not met"
    return f"<= {format_ns(target)}: not resolved (the interval holds it)"


ORDERS = {True: "in a loop", False: "after the other model"}
NONE = pyfxprof.ProfilerAction.NONE
#: Every kind of call timed, in the order their figures are printed.
KINDS = ("plain", "compiled", "profiled", "none", "alone", "twin")
LABELS = {"plain": "plain call", "compiled": "torch.compile(backend='eager')",
          "profiled": "Profiler loop, recording", "none": "Profiler loop, NONE step"}


def spelled(estimate: Estimate) -> str:
    """'+1.2 µs [+0.4 µs, +2.0 µs]': the median and its interval, resolved or not."""
    if estimate.low is None or estimate.high is None:
        return f"{format_ns(estimate.median)} [too few pairs]"
    return "{} [{}, {}]".format(*(("+" if v >= 0 else "") + format_ns(v) for v in
                                  (estimate.median, estimate.low, estimate.high)))


def quartiles(work: Workload, in_loop: bool) -> None:
    """Each kind's per-call median with its quartiles."""
    for kind, label in LABELS.items():
        q1, q2, q3 = np.percentile(work.series(in_loop, kind), [25, 50, 75])
        print(f"    {label:32s} {format_ns(q2):>9s}  [{format_ns(q1)}, {format_ns(q3)}]")


def beyond_compile(found: dict[str, Workload], in_loop: bool) -> None:
    """The loop's cost beyond torch.compile's (DESIGN.md's budget), and each kind's cost
    over the plain call, paired."""
    print(f"  {'workload':14s} added per call over the plain call [95% interval]; the loop "
          f"beyond torch.compile")
    for name, work in found.items():
        plain = work.series(in_loop, "plain")
        added = {kind: spelled(paired_estimate(plain, work.series(in_loop, kind)))
                 for kind in ("compiled", "profiled", "none")}
        beyond = paired_estimate(work.series(in_loop, "compiled"),
                                 work.series(in_loop, "profiled"))
        print(f"  {name:14s} torch.compile {added['compiled']}; loop {added['profiled']}; "
              f"NONE step {added['none']}")
        print(f"  {'':14s} loop beyond torch.compile: {spelled(beyond)} — "
              f"{verdict(beyond, TARGET_PER_CALL_NS)}")
        quartiles(work, in_loop)


def report(found: dict[str, Workload], in_loop: bool) -> None:
    print(f"{ORDERS[in_loop]}:")
    print(f"  {'workload':14s} {'plain/call':>10s}  added/call [95% interval] over pairs")
    for name, work in found.items():
        plain = work.series(in_loop, "plain")
        added = paired_estimate(plain, work.series(in_loop, "profiled"))
        check = f"  {verdict(added, TARGET_PER_CALL_NS)}" if name == "one node" else ""
        print(f"  {name:14s} {format_ns(np.median(plain)):>10s}  {added.text()} over "
              f"{len(plain)} pairs{check}")
    for chain_name in [name for name in CHAINS if name in found and "one node" in found]:
        one, chain = found["one node"], found[chain_name]
        for label, kind in (("the Profiler loop", "profiled"),
                            ("the codegen executor alone", "alone"),
                            ("a second plain twin (bias check)", "twin")):
            if not (one.times[in_loop][kind] and chain.times[in_loop][kind]):
                continue  # no executor alone (a capture other than fx): nothing to compare
            one_added = one.series(in_loop, kind) - one.series(in_loop, "plain")
            chain_added = chain.series(in_loop, kind) - chain.series(in_loop, "plain")
            per_node = paired_estimate(one_added, chain_added).scaled(299)
            check = "" if kind == "twin" else f" — {verdict(per_node, TARGET_PER_NODE_NS)}"
            print(f"  added per node beyond the first ({chain_name}), {label}: "
                  f"{per_node.text()}{check}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50, help="pairs per workload and round")
    parser.add_argument("--streak", type=int, default=4,
                        help="calls of each model in a row in the loop order (the first dropped)")
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append",
                        help="these workloads only (repeat the option for several)")
    options = parser.parse_args()
    if options.streak < 2:
        parser.error("--streak must be at least 2 (the first call of each streak is dropped)")
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(describe_machine())
    with torch.inference_mode():
        found = {name: Workload(name) for name in options.only or WORKLOADS}
        for work in found.values():
            print(f"  {work.name}: {work.describe}")
        streaks = -(-options.calls // (options.streak - 1))  # about `calls` kept per kind
        for _ in range(options.rounds):
            for work in found.values():
                work.block(streaks, options.streak)
                work.block(options.calls, 1)
    print(describe_machine())
    for in_loop in (True, False):
        report(found, in_loop)
        beyond_compile(found, in_loop)


if __name__ == "__main__":
    main()
