"""Cases for benchmarks/audit_inputs.py: the profile they start from, mutations of its saved
JSON, and bad arguments for the command line and the API."""

from __future__ import annotations

import torch

import pyfxprof


class Block(torch.nn.Module):
    """A small convolutional model with a nested module, a residual add and a functional op."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 5))

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.head(y + y.mean())


def base_profile(runs: int = 6) -> pyfxprof.Profile:
    """A profile of :class:`Block` on the CPU (every column a real capture fills)."""
    return pyfxprof.profile(Block().eval(), (torch.randn(2, 3, 8, 8),), runs=runs, warmup=1,
                            progress=False)
