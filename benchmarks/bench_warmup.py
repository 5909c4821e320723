"""profile()'s warm-up, "auto" against a fixed count (issue 39): per model, each profile in a
fresh interpreter (the model's first calls are the warm-up's business, so no process may have
warmed them before), warmup="auto" and warmup=10 interleaved; per side, the warm-up runs made
and their wall time, the timed runs' medians (the graph's runs, and the user's call), the
report's warm-up check (timed runs still slow: `prof.warmup().runs`; nodes with first-call
costs: `len(prof.node_warmup())`) and its line.

Usage: python benchmarks/bench_warmup.py [--pairs 3] [--runs 50] [--threads N]

Models: the CLI's default (ResNet-18 on 5x3x224x224, `pyfxprof profile`'s job), and a small
CNN whose first 4 calls (the analysis run and the first 3 warm-up runs) each spin 20 ms more
than its steady run of well under 1 ms (a model with a slow first few runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: One profile of MODEL (below) with WARMUP, printed as JSON.
PROFILE = """
import json, time, numpy as np, torch, pyfxprof
from pyfxprof.data.outside_graph import graph_only
if {threads}:
    torch.set_num_threads({threads})
{model}
started = time.perf_counter()
prof = pyfxprof.profile(model, inputs, runs={runs}, warmup={warmup!r}, progress=False,
                        leaf_modules=leaves)
report = prof.warmup()
print(json.dumps({{"warmup": prof.meta["warmup"], "warmup_s": prof.meta["wall_s"]["warmup"],
    "graph_ms": float(np.median(graph_only(prof).run_totals)) / 1e6,
    "call_ms": prof.meta.get("call", {{}}).get("median_ns", 0) / 1e6,
    "slow_timed_runs": report.runs, "slow_nodes": len(prof.node_warmup()),
    "line": str(report), "profile_s": time.perf_counter() - started}}))
"""

MODELS = {
    "resnet18 5x3x224x224": """
from pyfxprof.cli.default_model import resnet18
model, inputs, leaves = resnet18().eval(), (torch.randn(5, 3, 224, 224),), ()
""",
    "CNN, first 4 calls +20 ms": """
from pyfxprof import _C
class SlowStart(torch.nn.Module):
    calls = 0
    def forward(self, x):
        self.calls += 1
        if self.calls <= 4:
            _C._spin_ns(20_000_000)
        return x
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), SlowStart(),
                            torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                            torch.nn.Linear(16, 10)).eval()
inputs, leaves = (torch.randn(1, 3, 32, 32),), (SlowStart,)
""",
}


def profile_once(model: str, warmup, runs: int, threads: int) -> dict:
    """One profile in a fresh interpreter: PROFILE's figures."""
    code = PROFILE.format(model=model, warmup=warmup, runs=runs, threads=threads)
    done = subprocess.run([sys.executable, "-c", code], cwd=tempfile.gettempdir(), check=True,
                          capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return json.loads(done.stdout.strip().splitlines()[-1])


def summary(values: list[float], digits: int = 2) -> str:
    return (f"{statistics.median(values):.{digits}f} "
            f"({min(values):.{digits}f}..{max(values):.{digits}f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's)")
    args = parser.parse_args()
    print(f"load average at the start {os.getloadavg()}; {args.pairs} interleaved pairs, "
          f"runs={args.runs}; medians (min..max)")
    for name, model in MODELS.items():
        found = {"auto": [], 10: []}
        for _ in range(args.pairs):
            for warmup in found:
                found[warmup].append(profile_once(model, warmup, args.runs, args.threads))
        for warmup, profiles in found.items():
            column = lambda key: [p[key] for p in profiles]  # noqa: E731
            print(f"{name}, warmup={warmup!r}: warm-up runs {column('warmup')}, "
                  f"{summary(column('warmup_s'))} s; graph median {summary(column('graph_ms'))} "
                  f"ms, your call {summary(column('call_ms'))} ms; timed runs still slow "
                  f"{column('slow_timed_runs')}, nodes with first-call costs "
                  f"{column('slow_nodes')}; profile() {summary(column('profile_s'))} s")
            for line in sorted(set(column("line"))):
                print(f"    {line}")
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
