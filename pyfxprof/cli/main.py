"""The `pyfxprof` command line: one sub-command per module in pyfxprof.cli.commands."""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import PyfxprofError

#: Sub-command modules; each defines ``add_parser(subparsers)`` that registers its parser and
#: sets ``func=run`` where ``run(args) -> int`` returns the exit code.
COMMAND_MODULES = ("profile", "report", "diff", "fuse", "overhead")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="pyfxprof",
        description="Per-node profiler for PyTorch models (torch.fx + native timers).")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(f"pyfxprof.cli.commands.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of `pyfxprof` and `python -m pyfxprof`; returns the exit code.

    Example:
        >>> main(["profile", "--runs", "5", "--warmup", "1"])  # doctest: +SKIP
        0
    """
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PyfxprofError as error:
        print(f"pyfxprof: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pyfxprof: interrupted", file=sys.stderr)
        return 130
