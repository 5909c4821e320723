"""`pyfxprof overhead [MODEL]`: what each timing method adds, measured side by side in one process."""

from __future__ import annotations

import argparse

from ...tools.overhead import compare_overhead
from .arg_types import integer_at_least
from .model_args import add_model_arguments, model_and_inputs


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "overhead", help="compare the overhead of pyfxprof, time.time and torch.profiler",
        description="Run the model plain, under pyfxprof (codegen and interpreter), the FX "
                    "tutorial's time.time interpreter and torch.profiler, in one process, and "
                    "print each method's added time per node and total-time inflation.")
    add_model_arguments(parser)
    parser.add_argument("--runs", type=integer_at_least(1), default=30, help="timed runs per method (default 30)")
    parser.add_argument("--warmup", type=integer_at_least(0), default=3, help="untimed runs first (default 3)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model, inputs, name = model_and_inputs(args)
    print(compare_overhead(model, inputs, runs=args.runs, warmup=args.warmup, name=name).format())
    return 0
