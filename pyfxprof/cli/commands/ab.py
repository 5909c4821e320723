"""`pyfxprof ab MODEL_A MODEL_B`: interleaved A/B of two models in one process
(pyfxprof.compare), printed as a diff table; with ``--fail-on-regression 5%`` a CI gate
(exit 1 when the total, or a node worth >= 1% of it, is "slower" by >= 5%)."""

from __future__ import annotations

import argparse

from ...errors import PyfxprofError
from ...analyses.diff import distinct_labels
from ...run.compare import compare
from ..model_spec import DEFAULT_INPUT, load_model
from .arg_types import integer_at_least, open_unit_interval, positive_int
from .defaults import defaults_of
from .diff import add_diff_table_arguments, add_gate_argument, fraction, gate
from .model_args import add_threads_argument, apply_threads, parse_inputs


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `ab` on the CLI's sub-parsers.

    >>> parser = argparse.ArgumentParser()
    >>> _ = add_parser(parser.add_subparsers())
    >>> args = parser.parse_args(["ab", "m:a", "m:b", "--blocks", "12"])
    >>> args.blocks, args.min_change, args.check_outputs
    (12, 0.02, True)
    """
    parser = subparsers.add_parser(
        "ab", help="interleaved A/B of two models in one process (A = control, B = test)",
        description="Time MODEL_A and MODEL_B in alternating randomized blocks on the same "
                    "inputs and threads, and print per node the change with its 95% "
                    "Hodges-Lehmann interval over blocks, a q-value (Benjamini-Hochberg) and a "
                    "verdict: slower, faster, same within the margin, or unresolved. MODEL is "
                    "package.module:callable. See docs/ab.md.")
    _add_run_arguments(parser)
    add_diff_table_arguments(parser)
    add_gate_argument(parser)
    parser.set_defaults(func=run)
    return parser


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The models, inputs and compare()'s options, its defaults read from its signature."""
    defaults = defaults_of(compare)
    margin = f"{defaults['min_change']:.0%}".replace("%", "%%")
    parser.add_argument("control", metavar="MODEL_A", help="control: package.module:callable")
    parser.add_argument("test", metavar="MODEL_B", help="test: package.module:callable")
    parser.add_argument("--input", action="append", metavar="[NAME=]SHAPE[:DTYPE]",
                        help=f"a random input (as for profile; default {DEFAULT_INPUT}); both "
                             "models get the same tensors")
    add_threads_argument(parser)
    parser.add_argument("--blocks", type=integer_at_least(2), default=defaults["blocks"],
                        metavar="N", help=f"timed blocks per model (default {defaults['blocks']};"
                                          " >= 6 for an interval)")
    parser.add_argument("--max-blocks", type=integer_at_least(2), metavar="N",
                        help="most blocks per model: more are added until the whole model's "
                             "95%% interval is within --precision (default 3 x --blocks; "
                             "--blocks: none added)")
    parser.add_argument("--precision", type=fraction, metavar="PCT",
                        help="half width of the whole model's interval to stop at (default "
                             "half the margin)")
    parser.add_argument("--runs-per-block", type=positive_int, metavar="N",
                        default=defaults["runs_per_block"],
                        help=f"timed runs in each block (default {defaults['runs_per_block']})")
    parser.add_argument("--warmup", type=integer_at_least(0), default=defaults["warmup"],
                        metavar="N", help="untimed runs of each model first (default "
                                          f"{defaults['warmup']})")
    parser.add_argument("--copies", type=positive_int, default=defaults["copies"], metavar="N",
                        help="copies of each model timed in turn (default 4, fewer when their "
                             "weights would take over 1 GiB; docs/ab.md)")
    parser.add_argument("--seed", type=int, help="seed of the block order (default: random)")
    parser.add_argument("--min-change", type=fraction, default=defaults["min_change"],
                        metavar="PCT", help="equivalence margin: smaller changes are 'same' "
                                            f"(default {margin})")
    parser.add_argument("--alpha", type=open_unit_interval, default=defaults["alpha"],
                        help=f"false discovery rate across rows (default {defaults['alpha']})")
    parser.add_argument("--no-check-outputs", dest="check_outputs", action="store_false",
                        help="time models whose outputs differ in shape anyway")
    parser.add_argument("--labels", nargs=2, metavar=("X", "Y"),
                        help="names of A and B (default: their callables' names)")


def run(args: argparse.Namespace) -> int:
    """Load both models, compare them interleaved, print the table, apply the gate."""
    if args.depth is not None and args.group_by != "module":
        raise PyfxprofError("--depth needs --group-by module")
    apply_threads(args.threads)
    models = [load_model(spec) for spec in (args.control, args.test)]
    labels = args.labels or distinct_labels([s.rpartition(":")[2] for s in (args.control,
                                                                           args.test)])
    result = compare(models[0], models[1], parse_inputs(args.input or [DEFAULT_INPUT]),
                     blocks=args.blocks, runs_per_block=args.runs_per_block,
                     warmup=args.warmup, min_change=args.min_change, alpha=args.alpha,
                     labels=labels, check_outputs=args.check_outputs, copies=args.copies,
                     seed=args.seed, max_blocks=args.max_blocks, precision=args.precision)
    print(result.table(sort_by=args.sort, top=args.top, by=args.group_by, depth=args.depth))
    return gate(result, args.fail_on_regression)
