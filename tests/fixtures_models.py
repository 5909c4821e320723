"""Small models for CLI tests, importable as model specs: `tests.fixtures_models:conv_bn_relu`.

Each is tiny (runs in well under a millisecond on a 2x3x16x16 input, see SMALL_INPUT) and
deterministic where it matters: BatchNorm running statistics are fixed, not random, so fused
and unfused outputs differ measurably if folding were wrong.
"""

from collections import OrderedDict

import torch
from torch import nn

#: An input shape (CLI `--input` syntax) that every model here accepts.
SMALL_INPUT = "2x3x16x16"


def _bn(channels: int) -> nn.BatchNorm2d:
    """A BatchNorm2d with non-trivial, fixed running statistics and affine parameters."""
    bn = nn.BatchNorm2d(channels)
    with torch.no_grad():
        bn.running_mean.copy_(torch.linspace(-0.5, 0.5, channels))
        bn.running_var.copy_(torch.linspace(0.5, 2.0, channels))
        bn.weight.copy_(torch.linspace(0.8, 1.2, channels))
        bn.bias.copy_(torch.linspace(-0.1, 0.1, channels))
    return bn


def conv_bn_relu() -> nn.Sequential:
    """Conv2d(3, 8) -> BatchNorm2d -> ReLU with named children `conv`, `bn`, `relu` (fusible)."""
    return nn.Sequential(OrderedDict(conv=nn.Conv2d(3, 8, 3, padding=1), bn=_bn(8),
                                     relu=nn.ReLU()))


class ConvBNResidual(nn.Module):
    """`bn(conv(x)) + conv(x)`-style block: the conv output also feeds an add (not fusible)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = _bn(8)

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y) + y


def broken_factory() -> nn.Module:
    """A factory whose constructor fails, for error-path tests."""
    raise RuntimeError("this factory always fails")


class Flaky(nn.Module):
    """Raises ValueError on its `fail_on`-th call with real tensors (counting every call)."""

    def __init__(self, fail_on: int = 3) -> None:
        super().__init__()
        self.fail_on, self.calls = fail_on, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == self.fail_on:
            raise ValueError(f"bad batch on call {self.calls}")
        return x * 2


def flaky() -> nn.Sequential:
    """conv -> flaky -> relu, whose `flaky` child raises on its third call."""
    return nn.Sequential(OrderedDict(conv=nn.Conv2d(3, 4, 1), flaky=Flaky(3), relu=nn.ReLU()))
