"""Where a recorded call's time goes in the Profiler loop: before the timed run (the model's
``__call__``, the Profiler's wrapper and hot path), the run itself (the table's row), and
after it (the log entry and the way back), for a one-node model (`x + 1`) and a 300-node
`x + 1` chain, each call paired with a plain twin's call in random order.

The run's span is read from the Profiler's own log (its clock reads just before and after
the run), the call's from clock reads around it here, so `before` = call start -> run
start and `after` = run end -> call end. A path whose time grows from the one-node model to
the chain, with the same code, runs slower after the chain's ops than after one op (caches
and TLBs the ops evicted): bench_loop.py's "added per node" counts that time per node.

Run: .venv/bin/python benchmarks/bench_loop_path.py [--calls N]
"""

import argparse
import copy
import warnings

import numpy as np
import torch
from bench_loop import PlusOne, PlusOneChain, Unrolled
from machine import describe_machine

import pyfxprof
from pyfxprof import _C
from pyfxprof.data.units import format_ns
from pyfxprof.timing.native import logged_rows


def measure(model: torch.nn.Module, calls: int, order: np.random.Generator) -> dict:
    """Median before / run / after / whole call (profiled) and the plain twin's call, ns."""
    x, plain = torch.zeros(1), copy.deepcopy(model)
    profiler = pyfxprof.Profiler(model, keep_profiles=1)
    with profiler:  # the capture, outside the timed calls
        model(x)
    profiled_calls, plain_calls = np.empty((calls, 2), np.int64), np.empty(calls, np.int64)
    profiler.start()
    model(x)  # the window's first call takes the general path
    for k, profiled_first in enumerate(order.integers(0, 2, calls)):
        for profiled in (profiled_first, not profiled_first):
            started = _C.now_ns()
            model(x) if profiled else plain(x)
            ended = _C.now_ns()
            if profiled:
                profiled_calls[k] = started, ended
            else:
                plain_calls[k] = ended - started
    runs = logged_rows(profiler._log)[-calls:, :2]
    profiler.stop()
    return {"before": np.median(runs[:, 0] - profiled_calls[:, 0]),
            "run": np.median(runs[:, 1] - runs[:, 0]),
            "after": np.median(profiled_calls[:, 1] - runs[:, 1]),
            "call": np.median(profiled_calls[:, 1] - profiled_calls[:, 0]),
            "plain": np.median(plain_calls)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="pairs per model")
    options = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    order = np.random.default_rng(0)
    print(describe_machine())
    with torch.inference_mode():
        found = {"one node": measure(PlusOne(), options.calls, order),
                 "300 nodes": measure(Unrolled(PlusOneChain(300)), options.calls, order)}
    print(describe_machine())
    print(f"{'model':10s} {'before run':>11s} {'run':>10s} {'after run':>10s} "
          f"{'call':>10s} {'plain call':>11s}")
    for name, medians in found.items():
        print(f"{name:10s} {format_ns(medians['before']):>11s} {format_ns(medians['run']):>10s} "
              f"{format_ns(medians['after']):>10s} {format_ns(medians['call']):>10s} "
              f"{format_ns(medians['plain']):>11s}")


if __name__ == "__main__":
    main()
