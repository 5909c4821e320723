"""Busy-wait leaf modules of known duration for the latency, warm-up and sweep tests.

Each spins on the profiler clock (``_C._spin_ns``); profile them with
``leaf_modules=LEAVES`` so FX keeps each one as a single node.
"""

import torch
from torch import nn

from pyfxprof import _C


class Fixed(nn.Module):
    """Spins ``ns`` whatever the input."""

    def __init__(self, ns: int):
        super().__init__()
        self.ns = ns

    def forward(self, x):
        _C._spin_ns(self.ns)
        return x


class PerItem(nn.Module):
    """Spins ``ns`` per item of the first dimension of its input (``ns x batch``)."""

    def __init__(self, ns: int):
        super().__init__()
        self.ns = ns

    def forward(self, x):
        _C._spin_ns(self.ns * x.shape[0])
        return x


class SlowCalls(nn.Module):
    """Spins ``ns``, plus ``extra_ns`` on the calls numbered in ``slow`` (1-based; the untimed
    analysis run of pyfxprof.profile is call 1)."""

    def __init__(self, ns: int, extra_ns: int, slow):
        super().__init__()
        self.ns, self.extra_ns, self.slow, self.calls = ns, extra_ns, set(slow), 0

    def forward(self, x):
        self.calls += 1
        _C._spin_ns(self.ns + (self.extra_ns if self.calls in self.slow else 0))
        return x


LEAVES = (Fixed, PerItem, SlowCalls)


def chain(*modules) -> nn.Sequential:
    """The modules in sequence (each one node)."""
    return nn.Sequential(*modules)


def batch(size: int) -> tuple:
    """Inputs of batch ``size`` for the sweep: one (size, 4) tensor."""
    return (torch.zeros(size, 4),)
