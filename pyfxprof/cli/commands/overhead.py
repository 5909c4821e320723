"""`pyfxprof overhead [MODEL]`: what each timing method adds, from paired rounds in one process,
on a chain of small ops (where per-node costs resolve) and on MODEL."""

from __future__ import annotations

import argparse

from ...tools.overhead import CHAIN_NODES, MIN_ROUNDS, chain_overhead, compare_overhead
from .arg_types import integer_at_least
from .model_args import add_model_arguments, model_and_inputs


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "overhead", help="compare the overhead of pyfxprof, time.time and torch.profiler",
        description="Run a chain of small ops and the model plain and under pyfxprof (codegen "
                    "and interpreter), the FX tutorial's time.time interpreter and "
                    "torch.profiler, in paired rounds in one process, and print each "
                    "method's added time per node with a 95% interval ('not resolved' when "
                    "the interval holds zero).")
    add_model_arguments(parser)
    parser.add_argument("--rounds", type=integer_at_least(MIN_ROUNDS), default=30,
                        help="paired rounds per method (default 30)")
    parser.add_argument("--block", type=integer_at_least(1), default=5,
                        help="calls per block; a round's figure is each block's median "
                             "(default 5)")
    parser.add_argument("--warmup", type=integer_at_least(0), default=3,
                        help="untimed calls of each method first (default 3)")
    parser.add_argument("--chain", type=integer_at_least(0), default=CHAIN_NODES, metavar="N",
                        help=f"nodes of the x + 1 chain measured first (default {CHAIN_NODES}; "
                             "0: the model only)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model, inputs, name = model_and_inputs(args)
    options = {"rounds": args.rounds, "block": args.block, "warmup": args.warmup}
    if args.chain:
        print(chain_overhead(args.chain, **options).format())
        print()
    print(compare_overhead(model, inputs, name=name, **options).format())
    return 0
