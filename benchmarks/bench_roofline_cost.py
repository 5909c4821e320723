"""What the roofline's bookkeeping costs profile() by default: the analysis run's extra
counting (vector FLOPs, unknown ops, bytes per node), the peaks-cache read and the process
counters read around the timed runs (run/run_counters.py: minor page faults by getrusage,
the threads' run-queue wait from /proc/self/task/*/schedstat; two reads of each), measured
as profile()'s steps and whole wall time on fresh ResNet-18 instances, this tree against
another (the code before the roofline, or this code without the counters), in alternating
subprocesses; then each counter read's own cost, interleaved, in this process.

    python benchmarks/bench_roofline_cost.py BASE_TREE [--rounds 6]

BASE_TREE is a directory holding another pyfxprof package with its built _C (for instance
`git archive <commit> pyfxprof | tar -x -C /tmp/base` plus a copy of pyfxprof/_C*.so).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
#: profile()'s steps (run/wall_clock.py STEPS) compared, after the whole call.
STEPS = ("capture", "analysis", "instrument", "warmup", "user_call", "timed_runs")
CHILD = """
import json, time, torch, torchvision, pyfxprof
torch.manual_seed(0)
x = torch.randn(1, 3, 96, 96)
pyfxprof.profile(torchvision.models.resnet18(), (x,), runs=2, warmup=0, progress=False)
rows = []
for _ in range({calls}):
    model = torchvision.models.resnet18()
    begin = time.perf_counter()
    prof = pyfxprof.profile(model, (x,), runs=3, warmup=0, progress=False)
    rows.append([time.perf_counter() - begin] + [prof.meta["wall_s"].get(step, 0.0)
                                                  for step in {steps!r}])
print(json.dumps(rows))
"""


def run(tree: Path, calls: int) -> list[list[float]]:
    """(profile() seconds, then each of STEPS' seconds) of `calls` profiles in a fresh process
    on `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", CHILD.format(calls=calls, steps=STEPS)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def counter_reads(reads: int = 2000) -> dict[str, float]:
    """Median µs of one read of each counter profile() reads twice around its timed runs,
    the reads interleaved (getrusage's minor faults, the threads' schedstat wait)."""
    sys.path.insert(0, str(HERE))
    import torch
    from pyfxprof.run.first_touch import minor_faults
    from pyfxprof.run.run_counters import core_wait_ns
    torch.ones(1 << 20).add_(1)  # torch's threads started, as after profile()'s warm-up
    counters = {"getrusage (faults)": minor_faults, "schedstat (core wait)": core_wait_ns}
    times: dict[str, list[float]] = {name: [] for name in counters}
    for _ in range(reads):
        for name, read in counters.items():
            begin = time.perf_counter()
            read()
            times[name].append(time.perf_counter() - begin)
    return {name: float(np.median(found)) * 1e6 for name, found in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("base", type=Path)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=4)
    args = parser.parse_args()
    found: dict[str, list] = {"base": [], "this": []}
    for round_ in range(args.rounds):  # alternate which tree goes first
        order = [("base", args.base), ("this", HERE)]
        for name, tree in order if round_ % 2 == 0 else order[::-1]:
            found[name] += run(tree, args.calls)
    print(f"load {os.getloadavg()}")
    base, this = (np.array(found[name]) for name in ("base", "this"))
    for column, label in enumerate(("profile() wall",) + STEPS):
        b, t = np.median(base[:, column]), np.median(this[:, column])
        print(f"{label}: base median {b * 1e3:.1f} ms, this {t * 1e3:.1f} ms, ratio {t / b:.3f} "
              f"({len(base)} calls each)")
    for name, micros in counter_reads().items():
        print(f"{name}: {micros:.1f} µs per read (median of 2000), two per profile()")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
