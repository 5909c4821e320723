"""`pyfxprof diff A B`: compare a control and a test profile (or torch.profiler traces);
`--control A1 A2 --test B1 B2`: several sessions per side, tested between sessions.

With ``--fail-on-regression 5%`` it is a CI gate, its exit codes GATE_CODES: 1 when the run
total, or a node worth >= 1% of the control total, has the verdict "slower" by at least 5%;
3 when one session per side cannot tell whether the run total is 5% slower or more (as
measured, or against the rows' common shift, a drift between the two sessions: give several
profiles per side); 0 otherwise; 2 for unreadable input or a bad argument.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ...analyses.compiled_diff import CompiledDiff
from ...analyses.diff import BY_CHOICES, MIN_RUNS, diff, distinct_labels
from ...views.diff_text import SORT_KEYS
from ...errors import PyfxprofError
from ...stats.confidence import FALSE_DISCOVERY_RATE
from ...stats.session_drift import may_hide_a_slowdown
from .arg_types import integer_at_least, open_unit_interval, positive_int

#: The gate's exit codes: passed, a regression found, bad input (every command), and a
#: slowdown of the run total that one session per side cannot tell from a drift.
PASSED, REGRESSION, BAD_INPUT, UNSEPARATED = 0, 1, 2, 3
GATE_CODES = {PASSED: "no slowdown", REGRESSION: "a significant slowdown",
              BAD_INPUT: "unreadable input or a bad argument",
              UNSEPARATED: "a slowdown one session per side cannot tell from a drift"}
#: Suffixes dropped from a file name to make its default label.
_SUFFIXES = (".gz", ".json", ".trace", ".pt")


def fraction(text: str) -> float:
    """argparse type: "5%" or "0.05" -> 0.05 (>= 0).

    >>> fraction("5%"), fraction("0.05")
    (0.05, 0.05)
    """
    try:
        value = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a percentage like 5% or 0.05, got {text!r}")
    return value


def default_labels(control: str, test: str) -> tuple[str, str]:
    """Labels from the file or directory names, suffixes dropped, made distinct.

    >>> default_labels("runs/a/trace.pt.trace.json", "runs/b/trace.pt.trace.json.gz")
    ('trace', 'trace (2)')
    """
    names = []
    for text in (control, test):
        name = Path(text).resolve().name
        for suffix in _SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[:-len(suffix)]
        names.append(name)
    return distinct_labels(names)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `diff` on the CLI's sub-parsers.

    >>> parser = argparse.ArgumentParser()
    >>> _ = add_parser(parser.add_subparsers())
    >>> args = parser.parse_args(["diff", "a.json", "b.json", "--min-change", "10%"])
    >>> args.min_change, args.group_by, args.fail_on_regression
    (0.1, 'node', None)
    """
    parser = subparsers.add_parser(
        "diff", help="compare two profiles or torch.profiler traces (A = control, B = test)",
        description="Compare A (control) and B (test): per node, or per op / module, median "
                    "times, the change with its 95% interval, a q-value (false discovery "
                    "rate across rows) and a verdict: slower, faster, same or unresolved. One "
                    "profile per side is tested against the noise between the two sessions; "
                    "several per side (--control A1 A2 --test B1 B2), over sessions. A and B "
                    "are pyfxprof profiles (.json / .json.gz), torch.profiler Chrome traces, "
                    "or directories of traces (one run per file). See docs/diff.md.")
    parser.add_argument("control", metavar="A", nargs="?",
                        help="control: profile, trace or trace directory")
    parser.add_argument("test", metavar="B", nargs="?",
                        help="test: profile, trace or trace directory")
    parser.add_argument("--control", dest="controls", nargs="+", metavar="A",
                        help="several control profiles (sessions), instead of A")
    parser.add_argument("--test", dest="tests", nargs="+", metavar="B",
                        help="several test profiles (sessions), instead of B")
    parser.add_argument("--labels", nargs=2, metavar=("X", "Y"),
                        help="names of A and B (default: their file names)")
    add_diff_table_arguments(parser)
    parser.add_argument("--min-change", type=fraction, default=0.05, metavar="PCT",
                        help="equivalence margin: smaller changes are 'same', e.g. 5%% "
                             "(default 5%%)")
    parser.add_argument("--alpha", type=open_unit_interval, default=FALSE_DISCOVERY_RATE,
                        help="false discovery rate across rows (Benjamini-Hochberg; "
                             "default 0.05)")
    parser.add_argument("--min-runs", type=integer_at_least(2), default=MIN_RUNS, metavar="N",
                        help=f"fewest runs per side for p-values (default {MIN_RUNS})")
    parser.add_argument("--plot", metavar="PATH",
                        help="write a bar chart of the largest duration changes")
    add_gate_argument(parser)
    parser.set_defaults(func=run)
    return parser


def add_diff_table_arguments(parser: argparse.ArgumentParser) -> None:
    """--sort, --top, --group-by and --depth of a diff's table (diff and ab)."""
    parser.add_argument("--sort", choices=SORT_KEYS, default="diff_duration",
                        help="row order (default: |diff_duration|, largest first)")
    parser.add_argument("--top", type=positive_int, default=20, metavar="N",
                        help="show the first N rows (default 20)")
    parser.add_argument("--group-by", choices=BY_CHOICES, default="node",
                        help="one row per node (default), op type, op, module type or module")
    parser.add_argument("--depth", type=positive_int, metavar="K",
                        help="with --group-by module: cut module paths after K components")


def add_gate_argument(parser: argparse.ArgumentParser) -> None:
    """--fail-on-regression PCT (diff and ab)."""
    parser.add_argument("--fail-on-regression", type=fraction, metavar="PCT",
                        help="exit 1 when the total, or a node worth >= 1%% of it, is "
                             "'slower' by >= PCT; 3 when one profile per side cannot tell "
                             "the total's slowdown >= PCT from a drift between sessions")


def sides(args: argparse.Namespace) -> tuple:
    """(control, test, labels) from A B or --control/--test lists; one line when mixed.

    >>> sides(argparse.Namespace(control="a.json", test=None, controls=None, tests=["b.json"],
    ...                          labels=None))
    ('a.json', ['b.json'], ('a', 'b'))
    """
    control = args.controls if args.controls else args.control
    test = args.tests if args.tests else args.test
    if (args.controls and args.control) or (args.tests and args.test) or \
            control is None or test is None:
        raise PyfxprofError("give one control and one test: A B, or --control A1 [A2 ...] "
                            "--test B1 [B2 ...]")
    first = [side[0] if isinstance(side, list) else side for side in (control, test)]
    return control, test, tuple(args.labels or default_labels(*first))


def gate(result, threshold: float | None) -> int:
    """The CI gate's exit code (GATE_CODES), its finding printed: REGRESSION (and one line
    per finding) when result.regressions(threshold) finds any; UNSEPARATED (one line) with
    one session per side when the run total is unresolved and may be a slowdown of at
    least ``threshold`` that a drift between the sessions mimics or hides (as measured, or
    against the rows' common shift: stats.session_drift.may_hide_a_slowdown), or the
    graph's total may (its nodes summed, where the run total is the user's call: the
    Python outside the graph is measured against another call); PASSED otherwise.

    >>> gate(None, None)
    0
    """
    if threshold is None:
        return PASSED
    found = result.regressions(threshold)
    text = f"{100 * threshold:g}%"
    if found:
        print(f"\nREGRESSION: {len(found)} significant slowdown(s) >= {text}:")
        print("\n".join(f"  {line}" for line in found))
        return REGRESSION
    noise = result.judged_design().noise if result.design.kind == "single" else None
    shift = noise.shift if noise is not None and noise.measured else 0.0
    totals = {"run total": result.totals()}
    if noise is not None and (graph := result.graph_totals()) is not None:
        totals["graph's total (its nodes summed)"] = graph
    hiding = [(what, total) for what, total in totals.items() if noise is not None and
              may_hide_a_slowdown(total["rel_change"], total["change"], shift, threshold)]
    if hiding:
        what, total = hiding[0]
        print(f"\nUNSEPARATED: the {what} is {100 * total['rel_change']:+.1f}%, and "
              f"{100 * math.expm1(math.log1p(total['rel_change']) - shift):+.1f}% against "
              f"the rows' common shift ({100 * math.expm1(shift):+.1f}%); one session per "
              f"side cannot tell a slowdown >= {text} from a drift between the two sessions; "
              "gate with several profiles per side (--control A1 A2 --test B1 B2) or "
              f"`pyfxprof ab` (exit {UNSEPARATED})")
        return UNSEPARATED
    print(f"\nno significant slowdown >= {text}")
    return PASSED


def _check_compiled_options(args: argparse.Namespace) -> None:
    """PyfxprofError naming an option that an eager-vs-compiled comparison (per module, no
    p-values) cannot honour."""
    given = [flag for flag, unset in (("--sort", args.sort == "diff_duration"),
                                      ("--group-by", args.group_by == "node"),
                                      ("--depth", args.depth is None),
                                      ("--plot", args.plot is None),
                                      ("--fail-on-regression", args.fail_on_regression is None))
             if not unset]
    if given:
        raise PyfxprofError(f"{given[0]} does not apply to an eager profile against a compiled "
                            "one, compared per module (eager vs kernel time): drop it, or "
                            "compare two eager or two compiled profiles")


def run(args: argparse.Namespace) -> int:
    """Print the comparison; write the plot; apply the regression gate. Returns the exit code.

    >>> run(parser.parse_args(["diff", "a.json", "b.json", "--fail-on-regression", "5%"]))
    ... # doctest: +SKIP
    0
    """
    if args.depth is not None and args.group_by != "module":
        raise PyfxprofError("--depth needs --group-by module")
    control, test, labels = sides(args)
    result = diff(control, test, labels=labels, min_change=args.min_change,
                  alpha=args.alpha, min_runs=args.min_runs)
    if isinstance(result, CompiledDiff):
        _check_compiled_options(args)
        print(result.table(top=args.top))
        return 0
    print(result.table(sort_by=args.sort, top=args.top, by=args.group_by, depth=args.depth))
    if args.plot:
        from ...views.diff_plots import visualize_duration_diff
        visualize_duration_diff(result.changes(args.group_by, args.depth), args.plot, args.top)
        print(f"\nwrote plot to {args.plot}")
    return gate(result, args.fail_on_regression)
