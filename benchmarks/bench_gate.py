"""The README's CI gate on one saved profile per side: `pyfxprof diff before.json after.json
--fail-on-regression 5%` over trials of two fresh profile() sessions (issue 46).

    python benchmarks/bench_gate.py --trials 20 --threads 1 [--keep DIR]
    python benchmarks/bench_gate.py --judge DIR   # the kept profiles judged again by this code

Scenarios (each trial: a fresh profile of the control and one of the test, 30 runs each,
saved, then the gate run as the CLI runs it, in this process; counts of its exit codes):
  same     an unchanged rerun: the gate must never exit 1 (0, or 3 where the two sessions
           drifted apart by more than the threshold);
  doubled  the second of two ~300 us nodes does twice the work: the gate must exit 1;
  whole    both ~300 us nodes +20% (the whole model but its few us of small nodes): never 0
           (1, or 3: the two long nodes' kind drifts apart from the small nodes between
           sessions by about as much, docs/diff.md).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pyfxprof  # noqa: E402
from bench_ab import LeafBlock as Work  # noqa: E402  (one timed node: reps matmul + tanh)
from machine import describe_machine  # noqa: E402
from pyfxprof.cli.main import main as cli_main  # noqa: E402

#: Matmuls per Work node of the control (the whole scenario: WHOLE_REPS; doubled: twice).
REPS, WHOLE_REPS = 10, 12


class Model(torch.nn.Module):
    """Two Work nodes with small elementwise nodes around them (about a dozen rows)."""

    def __init__(self, weights, reps=(REPS, REPS)) -> None:
        super().__init__()
        self.first, self.second = Work(weights[0], reps[0]), Work(weights[1], reps[1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(x) + 1.0
        x = self.first(x * 0.5)
        x = torch.sigmoid(x) - 0.5
        x = self.second(torch.abs(x) * 2.0)
        return torch.exp(-x) + torch.neg(x)


def gate(paths, threshold: str) -> int:
    """The CLI's exit code for the gate on two saved profiles (its output swallowed)."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            return int(cli_main(["diff", *paths, "--fail-on-regression", threshold]) or 0)
        except SystemExit as stop:
            return int(stop.code or 0)


def judge_kept(root: str, scenarios) -> None:
    """The gate's exit codes on the profiles a --keep run saved in `root`, per scenario."""
    for scenario in scenarios:
        counts: Counter = Counter()
        trial = 0
        while os.path.exists(os.path.join(root, f"{scenario}-{trial}-a.json")):
            paths = [os.path.join(root, f"{scenario}-{trial}-{side}.json") for side in "ab"]
            counts[f"exit {gate(paths, '5%')}"] += 1
            trial += 1
        print(f"{scenario} ({trial} kept pairs, judged by {pyfxprof.__file__}): " + ", ".join(
            f"{key} {value}" for key, value in sorted(counts.items())), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", nargs="+", choices=("same", "doubled", "whole"))
    parser.add_argument("--keep", metavar="DIR",
                        help="save the profiles in DIR (SCENARIO-TRIAL-a/b.json), to judge "
                             "them again with other code")
    parser.add_argument("--judge", metavar="DIR",
                        help="only judge the profiles kept in DIR (--keep) with this checkout's "
                             "gate: run it from another checkout to compare two versions on "
                             "the same sessions")
    args = parser.parse_args()
    if args.judge:
        return judge_kept(args.judge, args.only or ("same", "doubled", "whole"))
    torch.set_num_threads(args.threads)
    print(describe_machine())
    generator = torch.Generator().manual_seed(0)
    weights = [torch.randn(128, 128, generator=generator) / 12 for _ in range(2)]
    inputs = (torch.randn(64, 128, generator=generator),)
    tests = {"same": lambda: Model(weights), "doubled": lambda: Model(weights, (REPS, 2 * REPS)),
             "whole": lambda: Model(weights, (WHOLE_REPS, WHOLE_REPS))}
    leaves = dict(leaf_modules=[Work], runs=args.runs, warmup=10, progress=False)
    for scenario in args.only or tests:
        started, counts = time.perf_counter(), Counter()
        with (contextlib.nullcontext(args.keep) if args.keep
              else tempfile.TemporaryDirectory()) as root:
            for trial in range(args.trials):
                paths = [os.path.join(root, f"{scenario}-{trial}-{side}.json") for side in ("a", "b")]
                for path, model in zip(paths, (Model(weights), tests[scenario]())):
                    pyfxprof.profile(copy.deepcopy(model), inputs, **leaves).save(path)
                code = gate(paths, "5%")
                total = pyfxprof.diff(*paths).totals()
                counts[f"exit {code}"] += 1
                print(f"  {scenario} trial {trial + 1}: exit {code}, total {total['change']} "
                      f"{100 * total['rel_change']:+.1f}% [{100 * total['ci_low']:+.1f}, "
                      f"{100 * total['ci_high']:+.1f}]", flush=True)
        print(f"{scenario} ({time.perf_counter() - started:.0f} s, load "
              f"{os.getloadavg()[0]:.1f}): " + ", ".join(
                  f"{key} {value}" for key, value in sorted(counts.items())), flush=True)


if __name__ == "__main__":
    main()
