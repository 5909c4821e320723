"""argparse types shared by the sub-commands: each refuses bad text with a one-line message."""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass(frozen=True)
class integer_at_least:  # noqa: N801 — used as a function: type=integer_at_least(2)
    """An argparse type accepting ints >= `minimum` (a dataclass, so cli.parsers can name it).

    Example:
        >>> integer_at_least(2)("3")
        3
    """

    minimum: int

    def __call__(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = self.minimum - 1
        if value < self.minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {self.minimum}, "
                                             f"got {text!r}")
        return value


#: argparse type: an int >= 1.
positive_int = integer_at_least(1)


def warmup_count(text: str) -> int | str:
    """argparse type of profile's --warmup: an int >= 0, or "auto" (profile()'s warmup=).

    Example:
        >>> warmup_count("auto"), warmup_count("3")
        ('auto', 3)
    """
    if text == "auto":
        return text
    try:
        return integer_at_least(0)(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected auto or an integer >= 0, got {text!r}")


def open_unit_interval(text: str) -> float:
    """argparse type: a number strictly between 0 and 1 (e.g. a significance level).

    Example:
        >>> open_unit_interval("0.05")
        0.05
    """
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def device_name(text: str) -> str:
    """argparse type: a device torch knows, e.g. cpu, cuda, cuda:1.

    Example:
        >>> device_name("cuda:1")
        'cuda:1'
    """
    import torch  # late: the commands that take no device need not import torch
    try:
        torch.device(text)
    except (RuntimeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a device (cpu, cuda, cuda:1, ...)")
    return text


def node_names(text: str) -> tuple[str, ...]:
    """argparse type of a comma-separated list of node names or module paths (--alone).

    Example:
        >>> node_names("bn1, layer1.0.relu")
        ('bn1', 'layer1.0.relu')
    """
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise argparse.ArgumentTypeError("give node names or module paths, comma-separated "
                                         "(e.g. bn1,layer1.0.relu), or --no-alone")
    return names
