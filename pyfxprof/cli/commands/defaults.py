"""The sub-commands' option defaults, read from the signature of the function each command calls
(so a default is defined once, in Python), and the hidden old names of renamed options."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from typing import Any, Callable


def defaults_of(function: Callable) -> dict[str, Any]:
    """The defaults of `function`'s parameters by name; a parameter whose default is a
    dataclass instance (a group of options) also gives its fields' defaults by field name.

    Example:
        >>> def run(model, runs: int = 50, *, warmup: int = 10): ...
        >>> defaults_of(run)
        {'runs': 50, 'warmup': 10}
    """
    found: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        default = parameter.default
        if default is inspect.Parameter.empty:
            continue
        found[name] = default
        if dataclasses.is_dataclass(default) and not isinstance(default, type):
            found.update({field.name: getattr(default, field.name)
                          for field in dataclasses.fields(default)})
    return found


def add_alias(parser: argparse.ArgumentParser, old: str, option: argparse.Action) -> None:
    """Accept `old` as a hidden name of `option` (an action add_argument returned): it sets
    the same destination with the same type, and --help shows only the new name (docs/cli.md
    lists the old names).

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_alias(parser, "--rounds", parser.add_argument("--runs", type=int, default=30))
        >>> parser.parse_args(["--rounds", "10"]).runs, parser.parse_args([]).runs
        (10, 30)
    """
    alias = parser.add_argument(old, dest=option.dest, metavar=option.metavar,
                                default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    alias.type = option.type
