"""Save/load speed and file size of a large synthetic profile (default 10,000 runs x 1,000 nodes).

Usage: python benchmarks/bench_persist.py [--runs 10000] [--nodes 1000] [--repeat 3]

Samples are lognormal around a per-node base time (100 ns .. 1 ms), like real per-node
timings, so gzip sees realistic entropy. Each figure is the median of ``--repeat`` runs; every
load is checked to give a Profile equal to the saved one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyfxprof.data.persist import load_profile, save_profile  # noqa: E402
from pyfxprof.data.profile import Profile  # noqa: E402


def synthetic_profile(runs: int, nodes: int, seed: int = 0) -> Profile:
    """A ResNet-like nodes table and lognormal int64 samples (runs, nodes)."""
    rng = np.random.default_rng(seed)
    stacks = [(f"layer{i // 250}", f"layer{i // 250}.{i // 50 % 5}",
               f"layer{i // 250}.{i // 50 % 5}.conv{i % 50}") for i in range(nodes)]
    table = pd.DataFrame({
        "index": np.arange(nodes), "name": [s[-1].replace(".", "_") for s in stacks],
        "op": ["call_module"] * nodes, "target": [s[-1] for s in stacks],
        "module_path": [s[-1] for s in stacks], "module_type": ["Conv2d"] * nodes,
        "module_stack": stacks, "input_shapes": ["[5, 64, 56, 56]"] * nodes,
        "output_shapes": ["[5, 64, 56, 56]"] * nodes,
        "flops": rng.integers(0, 10**9, nodes), "out_bytes": rng.integers(0, 10**7, nodes),
    })
    base = np.exp(rng.uniform(np.log(100), np.log(1e6), nodes))
    samples = (base * rng.lognormal(0.0, 0.05, size=(runs, nodes))).astype(np.int64)
    meta = {"model": "synthetic", "device": "cpu", "runs": runs, "overhead_ns": 48.5}
    run_starts = np.cumsum(samples.sum(axis=1) + 10_000)
    return Profile(table, samples, samples.sum(axis=1) + 5_000, meta, run_starts=run_starts)


def measure(profile: Profile, path: Path, repeat: int) -> dict:
    """Median save and load seconds, file size, and the equality check."""
    saves, loads = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        save_profile(profile, path)
        saves.append(time.perf_counter() - start)
        start = time.perf_counter()
        loaded = load_profile(path)
        loads.append(time.perf_counter() - start)
        if loaded != profile:
            raise SystemExit(f"round trip of {path.name} is not equal")
    return {"save": statistics.median(saves), "load": statistics.median(loads),
            "size": os.path.getsize(path)}


def gzip_levels(profile: Profile, repeat: int) -> None:
    """Why the gzip level is 3: compression time and size of the JSON at levels 3 and 6."""
    import gzip
    import json

    from pyfxprof.data.persist import to_document

    data = json.dumps(to_document(profile)).encode()
    print("gzip level of the JSON text (best of repeats):")
    for level in (3, 6):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            size = len(gzip.compress(data, compresslevel=level))
            times.append(time.perf_counter() - start)
        print(f"  level {level}: {min(times):.2f} s, {size / 1e6:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    profile = synthetic_profile(args.runs, args.nodes)
    raw_mb = profile.samples.nbytes / 1e6
    print(f"profile: {args.runs:,} runs x {args.nodes:,} nodes, samples {raw_mb:.0f} MB "
          f"in memory (int64) + run_totals, run_starts; median of {args.repeat}")
    print(f"{'file':<10} {'save s':>7} {'load s':>7} {'size MB':>8} {'MB/sample MB':>13} "
          f"{'save M samples/s':>17} {'load M samples/s':>17}")
    with tempfile.TemporaryDirectory() as folder:
        for name in ("p.json", "p.json.gz"):
            r = measure(profile, Path(folder) / name, args.repeat)
            count = profile.samples.size / 1e6
            print(f"{name:<10} {r['save']:7.2f} {r['load']:7.2f} {r['size'] / 1e6:8.1f} "
                  f"{r['size'] / 1e6 / raw_mb:13.2f} {count / r['save']:17.1f} "
                  f"{count / r['load']:17.1f}")
    gzip_levels(profile, args.repeat)


if __name__ == "__main__":
    main()
