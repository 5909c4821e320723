"""`pyfxprof sweep [MODEL] --sizes 1,2,4,8`: profile a model at several batch sizes (the first
dimension of every --input) and print each node's fixed and per-item cost (docs/latency.md)."""

from __future__ import annotations

import argparse
import sys

from ...run.sweep import sweep
from ..model_spec import DEFAULT_INPUT, parse_input
from .arg_types import positive_int
from .defaults import defaults_of
from .model_args import add_model_arguments, model_and_inputs


def size_list(text: str) -> list[int]:
    """argparse type: comma-separated positive ints, at least two different ones.

    Example:
        >>> size_list("1,2,4,8")
        [1, 2, 4, 8]
    """
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        sizes = []
    if len(set(sizes)) < 2 or min(sizes) < 1:
        raise argparse.ArgumentTypeError(
            f"expected at least two different positive sizes like 1,2,4,8, got {text!r}")
    return sizes


def resized(text: str, size: int) -> str:
    """The input spec ``text`` (SHAPE[:DTYPE]) with its first dimension set to ``size``.

    Example:
        >>> resized("1x3x224x224", 8), resized("1x128:int64", 4)
        ('8x3x224x224', '4x128:int64')
    """
    shape, colon, dtype = text.partition(":")
    return "x".join([str(size)] + shape.split("x")[1:]) + colon + dtype


def add_parser(subparsers) -> None:
    """Register `sweep` on the `pyfxprof` sub-command parser."""
    parser = subparsers.add_parser(
        "sweep", help="profile at several batch sizes; fixed vs per-item cost per node",
        description="Profile MODEL with the first dimension of every --input set to each of "
                    "--sizes, then fit per node time = fixed + per_item x size (Theil–Sen).")
    add_model_arguments(parser)
    defaults = defaults_of(sweep)
    sizes = ",".join(map(str, defaults["sizes"]))
    parser.add_argument("--sizes", type=size_list, default=list(defaults["sizes"]),
                        help=f"batch sizes, comma-separated (default {sizes})")
    parser.add_argument("--runs", type=positive_int, default=defaults["runs"], metavar="N",
                        help=f"timed runs per size (default {defaults['runs']})")
    parser.add_argument("--warmup", type=int, default=defaults["warmup"], metavar="N",
                        help=f"untimed runs first (default {defaults['warmup']})")
    parser.add_argument("--top", type=positive_int, default=20, metavar="N",
                        help="nodes shown (default 20, slowest at the largest size first)")
    parser.add_argument("--plot", metavar="PATH",
                        help="write fixed-vs-per-item bars of the top nodes (PNG)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the sweep and print its table; exit code 0."""
    model, _, name = model_and_inputs(args)
    specs = args.input or [DEFAULT_INPUT]

    def make_inputs(size: int) -> tuple:
        return tuple(parse_input(resized(text, size), seed=i) for i, text in enumerate(specs))

    result = sweep(model, make_inputs, sizes=args.sizes, runs=args.runs, warmup=args.warmup,
                   name=name)
    print(result.render(top=args.top))
    if args.plot:
        result.plot(args.plot, top=args.top)
        print(f"wrote plot to {args.plot}", file=sys.stderr)
    return 0
