"""pyfxprof.bench() beside torch.utils.benchmark on torch.add, rounds interleaved in one process.

Usage: python benchmarks/bench_bench.py [--rounds 5] [--sizes 1,1024,1048576] [--threads 1]
                                        [--budget 1.0] [--min-run-time 0.2]

Each round measures, for every size in turn, torch.utils.benchmark's
``Timer("torch.add(x, y)").blocked_autorange(min_run_time)`` and ``pyfxprof.bench(torch.add,
x, y, budget=...)``, the two in alternating order from round to round, so drift and load hit
both alike. Printed per size: each tool's median per call (median over the rounds, with the
rounds' range), their ratio per round (median and range), the same torch Timer's median
over blocks as short as bench's (``timeit(number)`` repeated, 0.5 ms each) and bench's ratio
to it, bench's calls-alone median (each
call's own interval, the release of its result excluded), how often bench stopped at its
target, and its wall time; then, per size, the 10th percentile of 0.5 ms blocks of each (the
blocks that no other process interrupted: a comparison that survives load) for bench,
torch's Timer on ``torch.add(x, y)`` and on ``add(x, y)`` (torch.add bound to a name, so no
attribute lookup per call, as bench's generated code calls it); then bench's floor, on an
empty C function. On a machine with more runnable work than cores
torch.utils.benchmark's blocks (10,000 calls of a 1 us op) span several scheduler slices, and
its median counts other processes' time: read the load in the first line.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
from pathlib import Path

import numpy as np
import torch
from torch.utils.benchmark import Timer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe_machine  # noqa: E402

import pyfxprof  # noqa: E402
from pyfxprof.data.units import format_ns  # noqa: E402


def torch_median(x: torch.Tensor, threads: int, min_run_time: float) -> float:
    """torch.utils.benchmark's blocked_autorange median of torch.add(x, x), in ns."""
    timer = Timer("torch.add(x, y)", globals={"torch": torch, "x": x, "y": x},
                  num_threads=threads)
    return timer.blocked_autorange(min_run_time=min_run_time).median * 1e9


def torch_short_blocks_median(x: torch.Tensor, threads: int) -> float:
    """The same Timer's median over short blocks (as long as bench's): torch.utils.benchmark's
    own timing with bench's block length."""
    return statistics.median(short_block_times("torch.add(x, y)",
                                               {"torch": torch, "x": x, "y": x}, threads))


def short_block_times(statement: str, names: dict, threads: int, block_s: float = 0.0005,
                      seconds: float = 0.3) -> list[float]:
    """ns per call of each short block (`timeit(number)`, about `block_s`) of torch's Timer on
    `statement`, for `seconds`."""
    timer = Timer(statement, globals=names, num_threads=threads)
    number = max(1, int(block_s / max(timer.timeit(10).median, 1e-9)))
    times, started = [], time.perf_counter()
    while time.perf_counter() - started < seconds or len(times) < 10:
        times.append(timer.timeit(number).median * 1e9)
    return times


def low_percentiles(x: torch.Tensor, threads: int, rounds: int) -> str:
    """The 10th percentile of 0.5 ms blocks' ns per call: bench, torch's Timer on
    torch.add(x, y) and on add(x, y), rounds interleaved (median over the rounds)."""
    found: dict[str, list[float]] = {"bench": [], "torch.add(x, y)": [], "add(x, y)": []}
    for _ in range(rounds):
        m = pyfxprof.bench(torch.add, x, x, threads=threads, budget=0.3)
        found["bench"].append(float(np.percentile(m.block_ns / m.samples.shape[1], 10)))
        for statement in ("torch.add(x, y)", "add(x, y)"):
            names = {"torch": torch, "add": torch.add, "x": x, "y": x}
            found[statement].append(float(np.percentile(
                short_block_times(statement, names, threads), 10)))
    low = {name: statistics.median(values) for name, values in found.items()}
    return "  ".join(f"{name} {format_ns(value)}" for name, value in low.items()) + (
        f"  bench / torch.add(x, y) {low['bench'] / low['torch.add(x, y)']:.3f} "
        f"({format_ns(low['bench'] - low['torch.add(x, y)'])})")


def one_round(x: torch.Tensor, args: argparse.Namespace, bench_first: bool) -> dict:
    """Both tools once on `x`, in the given order (torch: blocked_autorange, then short
    blocks)."""
    found = {}
    for tool in (["bench", "torch"] if bench_first else ["torch", "bench"]):
        if tool == "torch":
            found["torch"] = torch_median(x, args.threads, args.min_run_time)
            found["short"] = torch_short_blocks_median(x, args.threads)
        else:
            started = time.perf_counter()
            m = pyfxprof.bench(torch.add, x, x, threads=args.threads, budget=args.budget)
            found.update(bench=m.median, alone=m.call_median, stopped=m.stopped,
                         wall=time.perf_counter() - started, precision=m.precision)
    return found


def spread(values: list[float], text=format_ns) -> str:
    return f"{text(statistics.median(values))} [{text(min(values))}, {text(max(values))}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="1,1024,1048576")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--budget", type=float, default=1.0)
    parser.add_argument("--min-run-time", type=float, default=0.2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(describe_machine())
    sizes = [int(size) for size in args.sizes.split(",")]
    rounds = {n: [] for n in sizes}
    for r in range(args.rounds):
        for n in sizes:
            rounds[n].append(one_round(torch.randn(n), args, bench_first=r % 2 == 0))
    print(f"torch.add(x, x), {args.threads} thread(s), {args.rounds} rounds interleaved; "
          "median [min, max] over rounds")
    for n, found in rounds.items():
        ratio = [f["bench"] / f["torch"] for f in found]
        short = [f["bench"] / f["short"] for f in found]
        print(f"n={n:>8}  torch.utils.benchmark {spread([f['torch'] for f in found])}  "
              f"bench {spread([f['bench'] for f in found])}  "
              f"ratio {spread(ratio, lambda v: f'{v:.3f}')}  "
              f"torch 0.5 ms blocks {spread([f['short'] for f in found])} "
              f"ratio {spread(short, lambda v: f'{v:.3f}')}  "
              f"calls alone {spread([f['alone'] for f in found])}  "
              f"at target {sum(f['stopped'] == 'target' for f in found)}/{len(found)}  "
              f"bench wall {spread([f['wall'] for f in found], lambda v: f'{v:.2f} s')}")
    print("10th percentiles of 0.5 ms blocks (unloaded blocks), median over the rounds:")
    for n in sizes:
        print(f"n={n:>8}  {low_percentiles(torch.randn(n), args.threads, args.rounds)}")
    print(floor(args.rounds))
    print(f"load after: {open('/proc/loadavg').read().split()[0]}")


def floor(rounds: int) -> str:
    """What bench's figure reads for an empty C function (its floor: the timed call's own
    dispatch and the generated line beyond the subtracted clock pair), beside timeit's loop
    around the same function and around `pass`, rounds interleaved."""
    from pyfxprof import _C

    found = {"bench": [], "timeit": [], "pass": []}
    for _ in range(rounds):
        found["bench"].append(pyfxprof.bench(_C._noop, 0, budget=0.5).median)
        for name, statement in (("timeit", "noop(0)"), ("pass", "pass")):
            times = timeit.repeat(statement, globals={"noop": _C._noop}, number=2000,
                                  repeat=100)
            found[name].append(statistics.median(times) / 2000 * 1e9)
    return (f"empty C function _C._noop(0): bench {spread(found['bench'])}  timeit "
            f"{spread(found['timeit'])}  timeit of `pass` {spread(found['pass'])}")


if __name__ == "__main__":
    main()
