"""Memory kept per pyfxprof.profile() call: tracemalloc's traced bytes and RSS after N calls on a
small model, over the same after a warm-up, per call (target: <= 1 KB per call).

Run: .venv/bin/python benchmarks/bench_leak.py [--calls 10000] [--warmup 50]
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


def kept_per_call(calls: int, warmup: int) -> dict:
    """Traced and RSS growth over `calls` profiles, after `warmup` untraced ones."""
    x = torch.randn(2, 8)
    for _ in range(warmup):
        profile_once(x)
    gc.collect()
    tracemalloc.start()
    traced_before = tracemalloc.get_traced_memory()[0]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    for _ in range(calls):
        profile_once(x)
    gc.collect()
    traced_after = tracemalloc.get_traced_memory()[0]
    top = tracemalloc.take_snapshot().statistics("lineno")[:3]
    tracemalloc.stop()
    return {"calls": calls, "seconds": time.perf_counter() - start,
            "traced_per_call": (traced_after - traced_before) / calls,
            "max_rss_growth": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            - rss_before, "top": [str(s) for s in top]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    print(describe_machine())
    found = kept_per_call(args.calls, args.warmup)
    print(f"{found['calls']} profile() calls in {found['seconds']:.1f} s: "
          f"{found['traced_per_call']:.0f} B kept per call (tracemalloc), max RSS "
          f"+{found['max_rss_growth'] / 2**20:.1f} MiB")
    for line in found["top"]:
        print(f"  {line}")


if __name__ == "__main__":
    main()
