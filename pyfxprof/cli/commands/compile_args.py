"""--compile, --compile-mode and --compare-eager of `pyfxprof profile`: profile the model as
torch.compile (Inductor) runs it, per kernel, and print the kernel and per-module tables."""

from __future__ import annotations

import argparse
from typing import Any

from ...analyses.compiled_diff import CompiledDiff, kernel_table

#: torch.compile's modes (`--compile-mode`).
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def add_compile_arguments(parser: argparse.ArgumentParser) -> None:
    """Register --compile, --compile-mode and --compare-eager.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_compile_arguments(parser)
        >>> parser.parse_args(["--compile", "--compile-mode", "max-autotune"]).compile_mode
        'max-autotune'
    """
    group = parser.add_argument_group("compiled models (docs/compiled.md)")
    group.add_argument("--compile", action="store_true",
                       help="compile the model with torch.compile (Inductor) and time each "
                            "kernel, with the source nodes and modules it covers")
    group.add_argument("--compile-mode", choices=COMPILE_MODES, default=None,
                       help="torch.compile mode (implies --compile)")
    group.add_argument("--compare-eager", action="store_true",
                       help="also profile the eager model and print eager vs compiled per "
                            "module (implies --compile)")


def compile_option(args: argparse.Namespace) -> dict | None:
    """profile(compile=...) for the parsed arguments (None: not compiled).

    Example:
        >>> compile_option(argparse.Namespace(compile=True, compile_mode=None,
        ...                                   compare_eager=False))
        {'mode': None}
    """
    if not (args.compile or args.compile_mode or args.compare_eager):
        return None
    return {"mode": args.compile_mode}


def print_compiled(compiled: Any, eager: Any, top: int | None) -> None:
    """The kernel table of `compiled` and, with an `eager` profile, the per-module and
    per-op diffs."""
    print()
    print(kernel_table(compiled, top=top))
    if eager is not None:
        print()
        diff = CompiledDiff(eager, compiled)
        print(diff.table(top=top))
        print()
        print(diff.ops_table(top=top))
