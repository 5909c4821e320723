"""`pyfxprof replay MODEL NODE`: one profiled node rebuilt and timed alone, its variants
compared with it, and a standalone script of it (Profile.replay, docs/replay.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ...data.persist import load_profile
from ...run.runner import profile
from ...tools.replay import CACHES, replay
from ...tools.replay_script import replay_script
from ...tools.replay_variants import VARIANTS
from .arg_types import integer_at_least, warmup_count
from .defaults import defaults_of
from .model_args import add_model_arguments, model_and_inputs

#: The defaults of the functions the command calls (docs/cli.md).
DEFAULTS = {**defaults_of(profile), **defaults_of(replay)}


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `replay` on the CLI's sub-parsers.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> _ = add_parser(parser.add_subparsers())
        >>> args = parser.parse_args(["replay", "torchvision.models:resnet18", "layer1_0_conv1",
        ...                           "--variants", "channels_last,bf16"])
        >>> args.node, args.variants, args.cache
        ('layer1_0_conv1', 'channels_last,bf16', 'warm')
    """
    parser = subparsers.add_parser(
        "replay", help="time one node of MODEL alone, try variants, write a standalone script",
        description="Profile MODEL on --input (or read --profile, a saved profile of it), "
                    "rebuild NODE (a node name or module path) alone with the model's own "
                    "module and weights on inputs of its recorded shapes, and print its "
                    "isolated medians beside its in-graph median; --variants compares "
                    "each variant with the as-is call in interleaved blocks.")
    add_model_arguments(parser)
    parser.add_argument("node", metavar="NODE", help="the node's name (prof.table()) or "
                                                     "module path")
    parser.add_argument("--profile", metavar="PATH", dest="saved",
                        help="a profile of MODEL saved by Profile.save (default: profile now)")
    parser.add_argument("--variants", metavar="V[,V...]",
                        help=f"variants to compare, among {', '.join(VARIANTS)}")
    parser.add_argument("--cache", choices=CACHES, default=DEFAULTS["cache"],
                        help="warm: same inputs each call; cold: inputs and weights rotated "
                             "beyond the last-level cache; both (default warm)")
    parser.add_argument("--budget", type=float, default=DEFAULTS["budget"], metavar="SECONDS",
                        help=f"seconds of the replay's timing (default {DEFAULTS['budget']:g})")
    parser.add_argument("--runs", type=integer_at_least(1), default=DEFAULTS["runs"],
                        metavar="N", help=f"timed runs of the profile taken first "
                                          f"(default {DEFAULTS['runs']})")
    parser.add_argument("--warmup", type=warmup_count, default=DEFAULTS["warmup"], metavar="N",
                        help=f"its warm-up runs (default {DEFAULTS['warmup']})")
    parser.add_argument("--shapes", type=integer_at_least(1), default=DEFAULTS["shapes"],
                        metavar="N", help="the most recorded shapes of a node that saw several "
                                          "(a decode step over a growing cache) replayed, "
                                          f"evenly spread (default {DEFAULTS['shapes']})")
    parser.add_argument("--script", metavar="PATH",
                        help="also write a standalone script (torch only) of the node here, "
                             "timing each of its recorded shapes")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Profile (or load) MODEL, replay NODE and print the result; write --script.

    Example:
        >>> run(parser.parse_args(["replay", "torch.nn:ReLU", "relu"]))  # doctest: +SKIP
        0
    """
    model, inputs, _ = model_and_inputs(args)
    if args.saved:
        prof = load_profile(args.saved)
    else:
        prof = profile(model, inputs, runs=args.runs, warmup=args.warmup, progress=False,
                       alone=False)  # the replay below times the node alone
    result = replay(prof, args.node, model=model, variants=args.variants,
                    budget=args.budget, cache=args.cache, shapes=args.shapes)
    print(result.table())
    if args.script:
        Path(args.script).write_text(replay_script(prof, args.node, model=model, shape="all"))
        print(f"wrote {args.script}: run it with python (it needs torch only)")
    return 0
