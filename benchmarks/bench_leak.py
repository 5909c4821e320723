"""Memory kept per pyfxprof.profile() call: tracemalloc's traced bytes after N calls on a small
model, per call overall (from the second call: the first imports modules) and after a warm-up, with the growth of each window
of calls (target: <= 1 KB per call).

Run: .venv/bin/python benchmarks/bench_leak.py [--calls 10000] [--warmup 50] [--window 1000]
"""

import argparse
import gc
import resource
import time
import tracemalloc

import torch

import pyfxprof
from machine import describe_machine


def model() -> torch.nn.Module:
    """A fresh small model each call (a serving process profiling new modules)."""
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))


def profile_once(x: torch.Tensor) -> None:
    pyfxprof.profile(model(), (x,), runs=3, warmup=1, progress=False)


def traced_now() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def kept_per_call(calls: int, warmup: int, window: int) -> dict:
    """Traced bytes from before the first call, after `warmup` calls and after each `window`."""
    x = torch.randn(2, 8)
    profile_once(x)  # untraced: the modules torch and pyfxprof import on first use
    tracemalloc.start()
    start_bytes, start = traced_now(), time.perf_counter()
    for _ in range(warmup):
        profile_once(x)
    marks = [(warmup, traced_now())]
    rss_after_warmup = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    while marks[-1][0] < warmup + calls:
        for _ in range(min(window, warmup + calls - marks[-1][0])):
            profile_once(x)
        marks.append((warmup + calls if marks[-1][0] + window > warmup + calls
                      else marks[-1][0] + window, traced_now()))
        print(f"  calls {marks[-2][0]}-{marks[-1][0]}: "
              f"{(marks[-1][1] - marks[-2][1]) / (marks[-1][0] - marks[-2][0]):.0f} B/call "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
    top = tracemalloc.take_snapshot().statistics("lineno")[:3]
    tracemalloc.stop()
    return {"calls": calls, "warmup": warmup, "seconds": time.perf_counter() - start,
            "overall_per_call": (marks[-1][1] - start_bytes) / (warmup + calls),
            "after_warmup_per_call": (marks[-1][1] - marks[0][1]) / calls,
            "rss_growth": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            - rss_after_warmup, "top": [str(s) for s in top]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--window", type=int, default=1000)
    args = parser.parse_args()
    print(describe_machine())
    found = kept_per_call(args.calls, args.warmup, args.window)
    print(f"1 + {found['warmup'] + found['calls']} profile() calls in {found['seconds']:.0f} s: "
          f"{found['overall_per_call']:.0f} B kept per call overall, "
          f"{found['after_warmup_per_call']:.0f} B per call after the first {found['warmup']}; "
          f"max RSS +{found['rss_growth'] / 2**20:.1f} MiB after the warm-up")
    for line in found["top"]:
        print(f"  {line}")
    print(describe_machine())


if __name__ == "__main__":
    main()
