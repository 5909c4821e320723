"""False alarms and power of "did my change help": interleaved A/A and A/B comparisons
(pyfxprof.compare), diffs of two saved A/A sessions and the CI gate on them (issue 33).

    python benchmarks/bench_ab.py --model net --trials 20 --threads 1
    python benchmarks/bench_ab.py --model resnet18 --trials 20 --only aa --threads 1

Scenarios (each counted over --trials):
  aa       interleaved A/A, two copies with identical weights: trials where any row (node
           view; module view) is slower/faster, and the whole-model verdicts;
  power    net only: the target block gets an added op (a clone of its output):
           trials where its module row is "slower" and no other module row is flagged;
  whole    net only: ops added at the end (--tail-ops clones): trials where the
           whole-model verdict is resolved (not "?");
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

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pyfxprof  # noqa: E402
from machine import describe_machine  # noqa: E402

FLAGGED = ("+", "-")


class Block(torch.nn.Module):
    """matmul + tanh; ``extra`` adds one op, a clone of the output (the change under test:
    a few % of the block; an op whose result is unused would be dropped by the capture)."""

    def __init__(self, weight: torch.Tensor, extra: bool = False) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())
        self.extra = extra

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x @ self.weight)
        return y.clone() if self.extra else y


class Net(torch.nn.Module):
    """12 blocks of matmul + tanh and one target block (index 6): 13 module rows."""

    def __init__(self, weights, target_extra: bool = False, tail_ops: int = 0) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(w, extra=target_extra and i == 6)
                                          for i, w in enumerate(weights))
        self.tail_ops = tail_ops

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        for _ in range(self.tail_ops):  # the whole-model change: clones after the blocks
            x = x.clone()
        return x


def models(name: str, tail_ops: int = 3):
    """(control, factory(kind) -> test model, inputs) for `name`."""
    generator = torch.Generator().manual_seed(0)
    if name == "net":
        weights = [torch.randn(128, 128, generator=generator) / 12 for _ in range(13)]
        control = Net(weights)
        tests = {"aa": lambda: Net(weights), "power": lambda: Net(weights, target_extra=True),
                 "whole": lambda: Net(weights, tail_ops=tail_ops)}
        return control, tests, (torch.randn(32, 128, generator=generator),)
    from pyfxprof.cli.default_model import resnet18
    control = resnet18().eval()
    return control, {"aa": lambda: copy.deepcopy(control)}, (
        torch.randn(1, 3, 64, 64, generator=generator),)


def flagged(diff, **view) -> bool:
    return bool(diff.compare(**view)["change"].isin(FLAGGED).any())


def interleaved(control, test, inputs, scenario: str, args) -> Counter:
    """Counts over the trials of one interleaved scenario."""
    counts: Counter = Counter()
    for trial in range(args.trials):
        diff = pyfxprof.compare(control, test, inputs, blocks=args.blocks,
                                runs_per_block=args.runs_per_block, progress=False, seed=trial)
        modules = diff.compare(by="module", depth=2)
        total = diff.totals()
        counts[f"total {total['change']}"] += 1
        counts["node rows flagged"] += flagged(diff)
        counts["module rows flagged"] += bool(modules["change"].isin(FLAGGED).any())
        if scenario == "power":
            target = modules.loc["blocks.6"]
            others = modules.drop("blocks.6")["change"].isin(FLAGGED).any()
            counts["target slower"] += target["change"] == "+"
            counts["target slower, no other row"] += target["change"] == "+" and not others
            counts["target estimate %"] += round(100 * target["rel_change"], 1) / args.trials
        if scenario == "whole":
            counts["whole resolved"] += total["change"] != "?"
            counts["whole estimate %"] += round(100 * total["rel_change"], 2) / args.trials
        print(f"  {scenario} trial {trial + 1}: total {total['change']} "
              f"{100 * total['rel_change']:+.2f}% [{100 * total['ci_low']:+.2f}, "
              f"{100 * total['ci_high']:+.2f}], rows flagged {flagged(diff)}", flush=True)
    return counts


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
    parser.add_argument("--model", choices=("net", "resnet18"), default="net")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--runs-per-block", type=int, default=3)
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--only", nargs="+", choices=("aa", "power", "whole", "sessions"))
    parser.add_argument("--tail-ops", type=int, default=3,
                        help="clones added after the blocks (whole)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    control, tests, inputs = models(args.model, args.tail_ops)
    print(describe_machine())
    print(f"model {args.model}, {args.trials} trials, {args.blocks} blocks x "
          f"{args.runs_per_block} runs per side")
    for scenario in args.only or ("aa", "power", "whole", "sessions"):
        if scenario != "sessions" and scenario not in tests:
            continue
        started = time.perf_counter()
        counts = (sessions(control, inputs, args) if scenario == "sessions"
                  else interleaved(control, tests[scenario](), inputs, scenario, args))
        print(f"{scenario} ({time.perf_counter() - started:.0f} s, load "
              f"{os.getloadavg()[0]:.1f}): " + ", ".join(
                  f"{key} {value:.2f}" if isinstance(value, float) else f"{key} {value}"
                  for key, value in sorted(counts.items())), flush=True)


if __name__ == "__main__":
    main()
