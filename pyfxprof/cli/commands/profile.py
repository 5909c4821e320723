"""`pyfxprof profile [MODEL]`: profile a model and print its per-node table."""

from __future__ import annotations

import argparse
import sys

from ...run.runner import profile
from .latency_args import add_latency_arguments, chosen_runs, print_latency
from .model_args import add_model_arguments, model_and_inputs
from .report import add_export_arguments, add_table_arguments, print_table, write_exports


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("profile", help="profile a model and print per-node times",
                                   description="Time every node of a model with native timers.")
    add_model_arguments(parser)
    parser.add_argument("--runs", type=int, default=50, help="timed runs (default 50)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs first (default 10)")
    parser.add_argument("--mode", choices=("codegen", "interpreter"), default="codegen")
    parser.add_argument("--device", default=None,
                        help="run on this device, e.g. cuda or cuda:1 (GPU runs also time "
                             "every node with CUDA events); default cpu")
    parser.add_argument("--capture", choices=("auto", "fx", "hooks", "whole"), default="auto",
                        help="how to capture the model (default auto: FX, then leafing the "
                             "failing submodule, then module hooks, then whole-model timing)")
    add_table_arguments(parser)
    add_latency_arguments(parser)
    parser.add_argument("--advise", action="store_true",
                        help="print optimisation suggestions drawn from the profile")
    parser.add_argument("--save", metavar="PATH",
                        help="save the profile as JSON (gzip when PATH ends in .gz)")
    add_export_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model, inputs, name = model_and_inputs(args)
    prof = profile(model, inputs, runs=args.runs, warmup=args.warmup, mode=args.mode, name=name,
                   device=args.device, capture=args.capture)
    print_table(chosen_runs(prof, args), args)
    print_latency(chosen_runs(prof, args), args)
    if args.advise:
        print()
        print(prof.advise())
    if args.save:
        prof.save(args.save)
        print(f"wrote profile to {args.save}", file=sys.stderr)
    write_exports(prof, args)
    return 0
