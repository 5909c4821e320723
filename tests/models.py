"""Small models shared by the profiling tests (kept apart from the CLI fixtures)."""

import collections.abc

import torch
from torch import nn

from pyfxprof import _C


class Block(nn.Module):
    """conv -> relu plus a residual add and a method call: every node op kind appears."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.relu = nn.ReLU()
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        y = self.relu(self.conv(x))
        return (y + x).mul(self.scale)


class Net(nn.Module):
    """Two Blocks, a flatten and a linear head; has Dropout and BatchNorm to check eval mode."""

    def __init__(self):
        super().__init__()
        self.block1 = Block()
        self.block2 = Block()
        self.bn = nn.BatchNorm2d(3)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(3 * 8 * 8, 4)

    def forward(self, x):
        x = self.bn(self.block2(self.block1(x)))
        return self.head(self.drop(torch.flatten(x, 1)))


class DataDependent(nn.Module):
    """Control flow on a tensor value: torch.fx cannot trace it."""

    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


def spin(x, ns: int):
    """Busy-wait `ns` on the profiler clock, then return `x` (one FX call_function node)."""
    _C._spin_ns(ns)
    return x


torch.fx.wrap("spin")


class Spin(nn.Module):
    """A node of known duration: busy-waits `ns` on the profiler clock."""

    def __init__(self, ns: int):
        super().__init__()
        self.ns = ns

    def forward(self, x):
        return spin(x, self.ns)


def net_input() -> torch.Tensor:
    return torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))


class GrowingCache:
    """A cache argument holding a tensor that grows by one row per call (when `append`)."""

    def __init__(self, length: int, append: bool = True) -> None:
        self.keys, self.append = torch.ones(length, 3), append


class CachedModel(torch.nn.Module):
    """Branches on an attribute of its cache argument: torch.fx cannot trace it, Dynamo can."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, cache):
        y = self.lin(x)
        if cache.append:
            cache.keys = torch.cat([cache.keys, y])
        return y.relu(), cache


class GraphBreak(nn.Module):
    """Two linear layers with an explicit graph break between them (Dynamo makes two graphs)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        x = torch.relu(self.a(x))
        torch._dynamo.graph_break()
        return torch.sigmoid(self.b(x))


class CallerBox:
    """A plain object of the caller's, held by a model (the soundness tests' state)."""


class CallerMapping(collections.abc.Mapping):
    """A read-only mapping of the caller's (its ``get`` catches the KeyError of a missing key)."""

    def __init__(self):
        self.data = {}

    def __getitem__(self, key):
        return self.data[key]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)
