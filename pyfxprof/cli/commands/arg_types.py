"""argparse types shared by the sub-commands: each refuses bad text with a one-line message."""

from __future__ import annotations

import argparse
from typing import Callable


def integer_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type accepting ints >= `minimum`.

    Example:
        >>> integer_at_least(2)("3")
        3
    """
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value
    return parse


#: argparse type: an int >= 1.
positive_int = integer_at_least(1)


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
