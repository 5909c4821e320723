"""False alarms and power of "did my change help": interleaved A/A and A/B comparisons
(pyfxprof.compare), diffs of two saved A/A sessions and the CI gate on them (issue 33).

    python benchmarks/bench_ab.py --model net --trials 20 --threads 1
    python benchmarks/bench_ab.py --model resnet18 --trials 20 --only aa sessions --threads 1
    python benchmarks/bench_ab.py --model leaf --trials 20 --only aa power power10 --threads 1

Scenarios (each counted over --trials):
  aa       interleaved A/A, two fresh copies of the model each trial: trials where any row (node
           view; module view) is slower/faster, and the whole-model verdicts;
  power    net only: the target block gets n calls y.contiguous() (each returns its output
           itself: a dispatch and a timed node), n making the block's module row nearest
           --power-change slower as an interleaved comparison sees it: pyfxprof.compare's
           estimates at POWER_COUNTS in the same process at the start, a line through
           them: trials where its module row is "slower" and no other module row is
           flagged;
  whole    net only: k clones after the blocks, k making the whole model nearest
           --whole-change slower (fitted the same way at WHOLE_COUNTS), judged with a
           margin of half that change and blocks added until the whole model's interval is
           within it (compare's precision; max_blocks --whole-max-blocks): trials where the
           whole-model verdict is resolved (not "?"), "+", and the interval above 0;
  power10  leaf only: as power, the target block +10% (power: +20%);
  leaf     (a model) 13 blocks, each one node (leaf_modules), of REPS matmul + tanh; the
           target block (index 6) does 20% (power) or 10% (power10) more of them;
  sessions two profile() sessions of fresh copies, saved and loaded, then diff(): trials where
           any row is flagged, and where the gate (--fail-on-regression 5%) would exit 1.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pyfxprof  # noqa: E402
from machine import describe_machine  # noqa: E402

FLAGGED = ("+", "-")


def added_op(y: torch.Tensor, ops: tuple) -> torch.Tensor:
    """The change under test, values unchanged, one op after the other: "same"
    (y.contiguous(), a call that returns y itself: its dispatch and its timed node only) or
    "clone". No op returns a view: a view's release would land in the next block's first
    row (and an unused result would be dropped by the capture)."""
    for op in ops:
        y = y.contiguous() if op == "same" else y.clone()
    return y


#: Counts of contiguous() calls tried in the target block (power): their cost grows with the
#: count, so the count for --power-change is read off a line fitted through them.
POWER_COUNTS = (2, 4, 8, 12, 16)
#: Counts of clones tried after the blocks (whole), fitted the same way (an addmm of zeros,
#: whose three nodes cost 3.6% of the whole net at its smallest, load 3.6, was too coarse).
WHOLE_COUNTS = (1, 2, 4, 6, 8)


class Block(torch.nn.Module):
    """matmul + tanh; ``extra`` (added_op's ops) adds those ops."""

    def __init__(self, weight: torch.Tensor, extra: tuple = ()) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x @ self.weight)
        return added_op(y, self.extra) if self.extra else y


class Net(torch.nn.Module):
    """12 blocks of matmul + tanh and one target block (index 6): 13 module rows;
    ``target_extra``: the target's added ops; ``tail``: ops after the blocks (the
    whole-model change)."""

    def __init__(self, weights, target_extra: tuple = (), tail: tuple = ()) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(w, extra=target_extra if i == 6 else ())
                                          for i, w in enumerate(weights))
        self.tail = tail

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return added_op(x, self.tail) if self.tail else x


#: Matmuls per leaf block of the control (leaf): the target's +20% and +10% are whole counts.
REPS = 10


class LeafBlock(torch.nn.Module):
    """``reps`` matmul + tanh, timed as one node (profile's leaf_modules)."""

    def __init__(self, weight: torch.Tensor, reps: int = REPS) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())
        self.reps = reps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.reps):
            x = torch.tanh(x @ self.weight)
        return x


class LeafNet(torch.nn.Module):
    """13 LeafBlocks; the target (index 6) does ``target_reps``: 13 node and module rows."""

    def __init__(self, weights, target_reps: int = REPS) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(LeafBlock(w, target_reps if i == 6 else REPS)
                                          for i, w in enumerate(weights))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def target_change(diff) -> float:
    """The target block's change as the comparison estimates it (its module row)."""
    return float(diff.changes(by="module", depth=2).loc["blocks.6", "rel_change"])


def total_change(diff) -> float:
    """The whole model's change as the comparison estimates it."""
    return float(diff.totals()["rel_change"])


def sized(estimate, base, make, sizes, inputs, change: float, through_zero: bool,
          blocks: int = 60) -> tuple:
    """(size, its fitted change) for an added op whose cost grows with its size: the change
    of `make(size)` against `base` for each of `sizes` as an interleaved comparison sees it
    (`estimate` of a pyfxprof.compare of `blocks` blocks, seeds apart from the trials'; an
    op costs more there than in bench, each op a timed node), a line fitted through them
    (through 0 when the op is nothing at size 0), and the size whose fitted change is nearest
    `change`: one estimate alone is a few % off on this VM, the line rests on all."""
    found = []
    for seed, size in enumerate(sizes, start=1000):
        diff = pyfxprof.compare(base, make(size), inputs, blocks=blocks, max_blocks=blocks,
                                progress=False, seed=seed)
        found.append(estimate(diff))
    x, y = np.asarray(sizes, dtype=float), np.asarray(found)
    slope, offset = ((float(x @ y / (x @ x)), 0.0) if through_zero
                     else tuple(float(v) for v in np.polyfit(x, y, 1)))
    size = max(1, round((change - offset) / slope)) if slope > 0 else max(sizes)
    return size, offset + slope * size


def models(name: str, power_change: float = 0.05, whole_change: float = 0.02):
    """(control, factory(kind) -> test model, inputs, sizing notes) for `name`."""
    generator = torch.Generator().manual_seed(0)
    if name == "net":
        weights = [torch.randn(128, 128, generator=generator) / 12 for _ in range(13)]
        control, inputs = Net(weights), (torch.randn(32, 128, generator=generator),)
        n, block_change = sized(target_change, control,
                                lambda n: Net(weights, target_extra=("same",) * n),
                                POWER_COUNTS, inputs, power_change, through_zero=True)
        k, whole_change = sized(total_change, control,
                                lambda k: Net(weights, tail=("clone",) * k), WHOLE_COUNTS,
                                inputs, whole_change, through_zero=True)
        k_ops, n_ops = ("clone",) * k, ("same",) * n
        tests = {"aa": lambda: Net(weights),
                 "power": lambda: Net(weights, target_extra=n_ops),
                 "whole": lambda: Net(weights, tail=k_ops)}
        notes = (f"{n} contiguous() call(s) in the target block: its row "
                 f"{100 * block_change:+.1f}% (fitted over compare's estimates at "
                 f"{POWER_COUNTS}); {k} clone(s) after the blocks: the whole model "
                 f"{100 * whole_change:+.1f}% (fitted at {WHOLE_COUNTS})")
        return control, tests, inputs, notes
    if name == "leaf":
        weights = [torch.randn(64, 64, generator=generator) / 8 for _ in range(13)]
        tests = {"aa": lambda: LeafNet(weights), "power": lambda: LeafNet(weights, 12),
                 "power10": lambda: LeafNet(weights, 11)}
        return LeafNet(weights), tests, (torch.randn(16, 64, generator=generator),), (
            f"target block {REPS} -> 12 (power) or 11 (power10) matmul + tanh")
    from pyfxprof.cli.default_model import resnet18
    control = resnet18().eval()
    return control, {"aa": lambda: copy.deepcopy(control)}, (
        torch.randn(1, 3, 64, 64, generator=generator),), ""


def flagged(diff, **view) -> bool:
    return bool(diff.changes(**view)["change"].isin(FLAGGED).any())


def interleaved(control, make_test, inputs, scenario: str, args) -> Counter:
    """Counts over the trials of one interleaved scenario, each a fresh pair of models: a
    deep copy of the control and `make_test()`, so that no two trials share an object (one
    control object for all trials made its own row differences count in every trial: ResNet-18's
    `layer2.0.relu` flagged in 4 trials of 20 in one run)."""
    counts: Counter = Counter()
    whole = scenario == "whole"
    # whole: a margin (and the interval's half width to stop at) of half the change, so
    # that the change is resolved by the verdicts (one at the margin is "+" only when its
    # estimate reaches the margin: half the time); the other scenarios: compare's defaults
    settings = dict(min_change=args.whole_change / 2, precision=args.whole_change / 2,
                    max_blocks=args.whole_max_blocks) if whole else \
        dict(max_blocks=args.max_blocks)
    for trial in range(args.trials):
        if args.model == "leaf":
            settings["leaf_modules"] = [LeafBlock]
        diff = pyfxprof.compare(copy.deepcopy(control), make_test(), inputs, blocks=args.blocks,
                                runs_per_block=args.runs_per_block, copies=args.copies,
                                progress=False, seed=trial, **settings)
        counts["blocks (mean)"] += len(set(diff.control.meta["ab"]["blocks"])) / args.trials
        modules = diff.changes(by="module", depth=2)
        total = diff.totals()
        counts[f"total {total['change']}"] += 1
        node_flag, module_flag = flagged(diff), bool(modules["change"].isin(FLAGGED).any())
        counts["node rows flagged"] += node_flag
        counts["module rows flagged"] += module_flag
        counts["any row flagged (node or module)"] += node_flag or module_flag
        if scenario.startswith("power"):
            target = modules.loc["blocks.6"]
            others = modules.drop("blocks.6")["change"].isin(FLAGGED).any()
            counts["target slower"] += target["change"] == "+"
            counts["target slower, no other row"] += target["change"] == "+" and not others
            counts["target estimate %"] += round(100 * target["rel_change"], 1) / args.trials
        if whole:
            counts["whole resolved"] += total["change"] != "?"
            counts["whole slower"] += total["change"] == "+"
            counts["whole interval above 0"] += total["ci_low"] > 0
            counts["whole estimate %"] += round(100 * total["rel_change"], 2) / args.trials
        rows = diff.changes()
        named = list(rows.index[rows["change"].isin(FLAGGED)])[:3]
        target = (f"; target {_verdict_text(modules.loc['blocks.6'])}"
                  if scenario.startswith("power") else "")
        print(f"  {scenario} trial {trial + 1}: total {_verdict_text(total)}, rows flagged "
              f"{named or 'none'}{target}", flush=True)
    return counts


def _verdict_text(row) -> str:
    """A row's verdict, estimate, interval and q-value, as printed per trial."""
    return (f"{row['change']} {100 * row['rel_change']:+.2f}% [{100 * row['ci_low']:+.2f}, "
            f"{100 * row['ci_high']:+.2f}] q {row['q_value']:.2g}")


def sessions(control, inputs, args) -> Counter:
    """Two separate profile() sessions of fresh copies, saved, loaded, diffed."""
    counts: Counter = Counter()
    runs = args.blocks * args.runs_per_block
    with tempfile.TemporaryDirectory() as root:
        for trial in range(args.trials):
            paths = [os.path.join(root, f"{trial}-{side}.json") for side in ("a", "b")]
            for path in paths:
                pyfxprof.profile(copy.deepcopy(control), inputs, runs=runs, warmup=10,
                                 progress=False).save(path)
            diff = pyfxprof.diff(*paths)
            counts["rows flagged"] += flagged(diff)
            counts["gate exits 1"] += bool(diff.regressions(0.05))
            counts[f"total {diff.totals()['change']}"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("net", "leaf", "resnet18"), default="net")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--runs-per-block", type=int, default=3)
    parser.add_argument("--copies", type=int,
                        help="compare(copies=): copies of each side timed in turn (default: "
                             "compare's, 4 where they fit)")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--only", nargs="+",
                        choices=("aa", "power", "power10", "whole", "sessions"))
    parser.add_argument("--max-blocks", type=int,
                        help="compare()'s max_blocks (default: its own, --blocks)")
    parser.add_argument("--whole-max-blocks", type=int, default=200,
                        help="max_blocks of the whole scenario (default 200)")
    parser.add_argument("--power-change", type=float, default=0.05,
                        help="the target block's change the added op is sized to (power)")
    parser.add_argument("--whole-change", type=float, default=0.02,
                        help="the whole model's change the tail ops are sized to (whole)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(describe_machine())
    control, tests, inputs, notes = models(args.model, args.power_change, args.whole_change)
    if notes:
        print(f"sizing (load {os.getloadavg()[0]:.1f}): {notes}")
    print(f"model {args.model}, {args.trials} trials, {args.blocks} blocks x "
          f"{args.runs_per_block} runs per side")
    for scenario in args.only or ("aa", "power", "power10", "whole", "sessions"):
        if scenario != "sessions" and scenario not in tests:
            continue
        started = time.perf_counter()
        counts = (sessions(control, inputs, args) if scenario == "sessions"
                  else interleaved(control, tests[scenario], inputs, scenario, args))
        print(f"{scenario} ({time.perf_counter() - started:.0f} s, load "
              f"{os.getloadavg()[0]:.1f}): " + ", ".join(
                  f"{key} {value:.2f}" if isinstance(value, float) else f"{key} {value}"
                  for key, value in sorted(counts.items())), flush=True)


if __name__ == "__main__":
    main()
