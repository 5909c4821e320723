"""`pyfxprof fuse [MODEL]`: fold eval-mode BatchNorm into the preceding conv, verify, benchmark."""

from __future__ import annotations

import argparse

import torch

from ...errors import PyfxprofError, first_line
from ...tools.fusion import fuse_conv_bn, max_abs_difference
from ...tools.fusion_bench import benchmark_fusion
from .arg_types import integer_at_least
from .defaults import defaults_of
from .model_args import add_model_arguments, model_and_inputs


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `fuse` on the CLI's sub-parsers.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> _ = add_parser(parser.add_subparsers())
        >>> args = parser.parse_args(["fuse", "--bench"])
        >>> args.model, args.bench, args.runs
        ('pyfxprof.cli.default_model:resnet18', True, 30)
    """
    parser = subparsers.add_parser(
        "fuse", help="fold eval-mode BatchNorm into the preceding conv/linear and verify it",
        description="Fuse Conv/BatchNorm pairs of MODEL (put in eval mode), print what was "
                    "fused or skipped and why, and the max abs difference of the outputs; "
                    "with --bench, time unfused, fused and fused+torch.jit.script interleaved.")
    add_model_arguments(parser)
    parser.add_argument("--bench", action="store_true",
                        help="benchmark unfused vs fused (and fused under torch.jit.script)")
    defaults = defaults_of(benchmark_fusion)
    parser.add_argument("--runs", type=integer_at_least(1), default=defaults["runs"],
                        metavar="N", help=f"timed runs (default {defaults['runs']})")
    parser.add_argument("--warmup", type=integer_at_least(0), default=defaults["warmup"],
                        metavar="N", help=f"untimed warm-up runs (default {defaults['warmup']})")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Fuse ``args.model`` and print the report, max abs difference and, with --bench, timings.

    Example:
        >>> run(parser.parse_args(["fuse", "--bench", "--runs", "10"]))  # doctest: +SKIP
        0
    """
    model, inputs, _ = model_and_inputs(args)
    if not isinstance(inputs, tuple):
        raise PyfxprofError("fuse takes positional inputs only (--input SHAPE[:DTYPE])")
    model.eval()
    _check_runs(model, inputs, args.model)
    if args.bench:
        print(benchmark_fusion(model, inputs, runs=args.runs, warmup=args.warmup).format())
        return 0
    fused = fuse_conv_bn(model)
    print(fused.fusion_report)
    shapes = [tuple(x.shape) for x in inputs]
    print(f"max abs difference, fused vs original, on inputs {shapes}: "
          f"{max_abs_difference(model, fused, inputs):.3g}")
    return 0


def _check_runs(model: torch.nn.Module, inputs: tuple, spec: str) -> None:
    """Run the model once so a wrong --input is a one-line error, not a traceback."""
    try:
        with torch.no_grad():
            model(*inputs)
    except Exception as error:  # the user's model: report, don't crash
        first = first_line(error, empty="no message")
        shapes = " ".join("x".join(map(str, x.shape)) for x in inputs)
        raise PyfxprofError(f"{spec} failed on inputs {shapes}: {type(error).__name__}: "
                            f"{first}; pass matching --input shapes") from None
