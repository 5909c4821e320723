"""The roofline's first touch of fresh outputs (docs/roofline.md): for element-wise ops into a
fresh output (`x + y` as a model writes it), the efficiency against the triad alone and
against the triad plus the measured first touch, per op, shape and dtype, with the peaks
measured once just before in this process, and the minor page faults the profile took per run
and output page (``meta["faults_per_run"]``: what the node's fresh output faulted in its steady
state, charged as docs/roofline.md says).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_first_touch.py [--runs 10] [--threads N]
"""

from __future__ import annotations

import argparse
import os

import torch
from torch import nn

import pyfxprof
from pyfxprof.run.machine_peaks import measure_peaks

M = 1 << 20
OPS = {"add": (lambda x, y: x + y, 2), "mul": (torch.mul, 2), "relu": (torch.relu, 1),
       "copy": (torch.clone, 1)}
CASES = [(op, shape, torch.float32) for op in OPS
         for shape in ((M // 2,), (2 * M,), (4 * M,), (6 * M,), (8 * M,), (2048, 4096),
                       (12 * M,))] + [
    (op, (8 * M,), dtype) for op in ("add", "mul") for dtype in (torch.float64, torch.int32)]


class Fresh(nn.Module):
    """`op` of the inputs into a fresh output."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, *inputs):
        return self.op(*inputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    options = parser.parse_args()
    runs = options.runs
    torch.set_num_threads(options.threads)
    print(f"load before: {os.getloadavg()[0]:.2f}, threads {torch.get_num_threads()}")
    peaks = measure_peaks(torch.device("cpu"), (torch.float32,))
    print(f"triad {peaks['bandwidth'] / 1e9:.2f} GB/s; mapped anew from "
          f"{(peaks['first_touch_bytes'] or 0) >> 20} MiB; first touch "
          f"{peaks['first_touch_ns_per_byte']:.2f} ns/byte")
    print("| op | shape | dtype | output MiB | faults per run and output page | median ms "
          "| efficiency vs triad alone | efficiency vs triad + first touch | bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    for op, shape, dtype in CASES:
        function, arity = OPS[op]
        inputs = tuple(torch.randn(shape).to(dtype) for _ in range(arity))
        prof = pyfxprof.profile(Fresh(function), inputs, runs=runs, warmup=2, progress=False)
        per_run = prof.meta["faults_per_run"]
        row = prof.roofline(peaks=peaks).sort_values("bytes").iloc[-1]
        plain = (row["roof_ns"] - row["first_touch_ns"]) / row["median_ns"]
        output = inputs[0].numel() * inputs[0].element_size()
        pages = per_run * 4096 / output
        print(f"| {op} | {tuple(shape)} | {str(dtype)[6:]} | {output >> 20} | {pages:.2f} | "
              f"{row['median_ns'] / 1e6:.1f} | {plain:.2f} | {row['efficiency']:.2f} "
              f"| {row['bound']} |", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
