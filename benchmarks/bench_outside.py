"""The user's call as the denominator (issue 34): per model, the user's call median, the
graph's, the (Python outside the graph) row and its share, the sum of every row's median
against the call's median (same profile() call), coverage of the call, and the top Python
functions of the row. Run: PYTHONPATH=. python benchmarks/bench_outside.py [--runs 30]."""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

import pyfxprof
from pyfxprof.data.outside_graph import python_functions
from pyfxprof.data.run_noise import preempted_mask


def models() -> dict:
    """name -> (model, inputs): the tiny transformers of tests/hf_models.py and ResNet-18."""
    from pyfxprof.cli.default_model import resnet18
    from tests import hf_models
    found = {name: getattr(hf_models, name)() for name in ("gpt2", "llama", "bert", "vit")}
    found["resnet18"] = (resnet18().eval(), (torch.randn(1, 3, 224, 224),))
    return found


def measure(name: str, model, inputs, runs: int) -> None:
    started = time.perf_counter()
    prof = pyfxprof.profile(model, inputs, runs=runs, warmup=5, progress=False)
    wall = time.perf_counter() - started
    call = prof.meta["call"]
    rows = float(prof.to_dataframe()["median"].sum())
    preempted = "?" if prof.run_noise is None else int(preempted_mask(prof.run_noise).sum())
    print(f"{name}: capture {prof.meta['capture_mode']} · call {call['median_ns'] / 1e3:.0f} µs"
          f" · graph {call['graph_median_ns'] / 1e3:.0f} µs · outside "
          f"{call['outside_median_ns'] / 1e3:.0f} µs = "
          f"{100 * call['outside_median_ns'] / call['median_ns']:.1f}% of the call "
          f"[{call['outside_low_ns'] / 1e3:.0f}..{call['outside_high_ns'] / 1e3:.0f} µs, "
          f"resolved {call['resolved']}] · rows sum {rows / 1e3:.0f} µs = "
          f"{100 * rows / call['median_ns']:.1f}% of the call (header: "
          f"{100 * call['rows_share']:.1f}%) · coverage {100 * prof.meta['coverage']:.1f}% · "
          f"graph coverage {100 * prof.meta.get('graph_coverage', prof.meta['coverage']):.1f}%"
          f" · preempted runs {preempted}/{prof.n_runs} · profile() {wall:.1f} s, breakdown "
          f"{prof.meta['wall_s'].get('user_call', float('nan')):.2f} s")
    for row in python_functions(prof, top=5).to_dict("records"):
        print(f"    {row['function']} [{row['origin']}] {row['file_line']} x{row['calls']:g}"
              f" {row['self_ns'] / 1e3:.1f} µs")
    named = len(call.get("functions") or [])
    if not call["resolved"]:
        print(f"    (no row: below the noise; the breakdown measured {named} functions)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"load {open('/proc/loadavg').read().split()[:3]} · torch {torch.__version__} · "
          f"1 thread · pid {os.getpid()}")
    for name, (model, inputs) in models().items():
        if not args.only or name in args.only:
            measure(name, model, inputs, args.runs)


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
