"""A float32 add's roofline with a fresh output against one into a buffer, around the 32 MiB
where glibc maps each allocation afresh (page faults on first touch): peaks measured first in
this process, then each case profiled (runs=20) and its efficiency printed.

    python benchmarks/bench_roofline_fresh_output.py
"""

import os

import torch
from torch import nn

import pyfxprof
from pyfxprof.run.machine_peaks import measure_peaks


class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class AddOut(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("out", torch.empty(n))

    def forward(self, x, y):
        return torch.add(x, y, out=self.out)


def main() -> None:
    peaks = measure_peaks(torch.device("cpu"), (torch.float32,))
    print("triad GB/s", round(peaks["bandwidth"] / 1e9, 2))
    for name, model, n in [("fresh 8M", Add(), 8 << 20),
                           ("fresh 8M-1024", Add(), (8 << 20) - 1024),
                           ("fresh 4M", Add(), 4 << 20), ("buffer 8M", AddOut(8 << 20), 8 << 20)]:
        row = pyfxprof.profile(model, (torch.randn(n), torch.randn(n)), runs=20, warmup=3,
                               progress=False).roofline(peaks=peaks).iloc[-1]
        print(name, row["bound"], f"efficiency {row['efficiency']:.2f} "
              f"[{row['efficiency_low']:.2f}, {row['efficiency_high']:.2f}]")
    print("load", os.getloadavg())


if __name__ == "__main__":
    main()
