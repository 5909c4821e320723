"""`pyfxprof overhead [MODEL]`: what each timing method adds, from paired rounds in one process,
on a chain of small ops (where per-node costs resolve) and on MODEL."""

from __future__ import annotations

import argparse

from ...tools.overhead import CHAIN_NODES, MIN_ROUNDS, chain_overhead, compare_overhead
from .arg_types import integer_at_least
from .defaults import add_alias, defaults_of
from .model_args import add_model_arguments, model_and_inputs

#: compare_overhead()'s defaults, which the options take (--runs: its paired `rounds`).
DEFAULTS = defaults_of(compare_overhead)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "overhead", help="compare the overhead of pyfxprof, time.time and torch.profiler",
        description="Run a chain of small ops and the model plain and under pyfxprof (codegen "
                    "and interpreter), the FX tutorial's time.time interpreter and "
                    "torch.profiler, in paired rounds in one process, and print each "
                    "method's added time per node with a 95% interval ('not resolved' when "
                    "the interval holds zero).")
    add_model_arguments(parser)
    runs = parser.add_argument("--runs", type=integer_at_least(MIN_ROUNDS),
                               default=DEFAULTS["rounds"], metavar="N",
                               help="timed runs (paired rounds) per method (default "
                                    f"{DEFAULTS['rounds']}; --rounds is the old name)")
    add_alias(parser, "--rounds", runs)
    parser.add_argument("--block", type=integer_at_least(1), default=DEFAULTS["block"],
                        metavar="N", help="calls per block; a round's figure is each block's "
                                          f"median (default {DEFAULTS['block']})")
    parser.add_argument("--warmup", type=integer_at_least(0), default=DEFAULTS["warmup"],
                        metavar="N", help="untimed calls of each method first (default "
                                          f"{DEFAULTS['warmup']})")
    parser.add_argument("--chain", type=integer_at_least(0), default=CHAIN_NODES, metavar="N",
                        help=f"nodes of the x + 1 chain measured first (default {CHAIN_NODES}; "
                             "0: the model only)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model, inputs, name = model_and_inputs(args)
    options = {"rounds": args.runs, "block": args.block, "warmup": args.warmup}
    if args.chain:
        print(chain_overhead(args.chain, **options).format())
        print()
    print(compare_overhead(model, inputs, name=name, **options).format())
    return 0
