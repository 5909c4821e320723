"""Cost of the Profiler's forward wrapper in NONE steps: a one-ReLU model called directly,
called inside an open Profiler block whose schedule never records (the model's own call plus
the wrapper's check), and through p.model; interleaved blocks of calls, medians.

Run: .venv/bin/python benchmarks/bench_loop_none.py [--calls N] [--blocks B]
(The first capture loads TorchDynamo, so from the second block on the wrapper is also made
opaque to torch.compile, as it is whenever transformers was imported.)
"""

import argparse
import statistics
import sys
import time

import torch

from machine import describe_machine


def per_call_ns(call, x, calls: int) -> float:
    """ns per call over one block of `calls` calls."""
    started = time.perf_counter_ns()
    for _ in range(calls):
        call(x)
    return (time.perf_counter_ns() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--blocks", type=int, default=31)
    options = parser.parse_args()
    import pyfxprof
    torch.set_num_threads(1)
    model, x = torch.nn.Sequential(torch.nn.ReLU()), torch.zeros(4)
    never = pyfxprof.Profiler(model, schedule=lambda step: pyfxprof.ProfilerAction.NONE)
    plain, inside, through = [], [], []
    with torch.inference_mode():
        for _ in range(options.blocks):
            plain.append(per_call_ns(model, x, options.calls))
            with never as p:
                inside.append(per_call_ns(model, x, options.calls))
                through.append(per_call_ns(p.model, x, options.calls))
    print(describe_machine(), f"· dynamo loaded: {'torch._dynamo' in sys.modules}")
    base = statistics.median(plain)
    for label, values in (("model(x), no Profiler", plain), ("model(x) in a NONE step", inside),
                          ("p.model(x) in a NONE step", through)):
        median = statistics.median(values)
        print(f"{label:28s} {median:8.0f} ns/call  {median / base:5.2f}x  +{median - base:6.0f} ns")


if __name__ == "__main__":
    main()
