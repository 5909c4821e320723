"""`pyfxprof report PROFILE.json`: re-render a saved profile as a table, and export its views.

``add_export_arguments`` and ``write_exports`` (one flag per format of the export registry,
views.exporters) are shared with commands that produce a Profile (e.g. `pyfxprof profile ...
--chrome-trace t.json --flamegraph f.svg`).
"""

from __future__ import annotations

import argparse
import inspect
import sys

from ...data.rank_profiles import RankProfiles, load_profile_or_ranks
from ...data.units import format_ns
from ...errors import PyfxprofError, first_line
from ...views.exporters import FORMATS
from ...views.report import DEFAULT_SORT, GROUP_KEYS, SORT_KEYS
from ...views.stacks import METRICS
from .arg_types import positive_int
from .latency_args import add_latency_arguments, chosen_runs, print_latency

def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """--sort, --top, --group-by, --depth and --tree, as Profile.table and tree take them."""
    parser.add_argument("--sort", choices=SORT_KEYS, default=DEFAULT_SORT,
                        help=f"row order (default: {DEFAULT_SORT} per node, descending, which "
                             "one preempted run cannot move; total sums over all runs)")
    parser.add_argument("--top", type=positive_int, default=None, metavar="N",
                        help="show only the first N rows (default: all)")
    parser.add_argument("--group-by", choices=GROUP_KEYS, default=None,
                        help="aggregate nodes by op type, op (target), module type, module "
                             "(inclusive, see --depth) or input shape")
    parser.add_argument("--depth", type=positive_int, default=None, metavar="K",
                        help="with --group-by module: roll up to modules K levels deep")
    parser.add_argument("--tree", action="store_true",
                        help="also print the module hierarchy with inclusive times")


def print_table(profile, args: argparse.Namespace) -> None:
    """The table (and tree, with --tree) the table arguments ask for."""
    if args.depth is not None and args.group_by != "module":
        raise PyfxprofError("--depth applies to --group-by module only; add --group-by module")
    try:
        table = profile.table(sort_by=args.sort, top=args.top, group_by=args.group_by,
                              depth=args.depth)
    except (KeyError, ValueError) as error:  # e.g. input_shape on a profile without shapes
        raise PyfxprofError(f"cannot show this table: {first_line(error)}") from None
    print(table)
    if args.tree:
        print()
        print(profile.tree())


def print_ranks(ranks, args: argparse.Namespace) -> None:
    """A RankProfiles' table (--top) and its stragglers.

    >>> print_ranks(load_rank_profiles("out/ranks.json"), args)   # doctest: +SKIP
    """
    print(ranks.table(top=args.top))
    stragglers = ranks.stragglers()
    print()
    if stragglers.empty:
        print("stragglers: none (no rank slower than the others beyond run-to-run noise)")
        return
    print("stragglers (node on rank: median vs the other ranks', p after Bonferroni):")
    for row in stragglers.itertuples():
        print(f"  {row.key} on rank {row.rank}: {format_ns(row.median)} vs "
              f"{format_ns(row.reference)} (+{format_ns(row.excess)}, p {row.p_value:.2g})")


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """One ``--NAME PATH`` flag per export format (views.exporters.FORMATS), and --metric for
    the formats that take it."""
    group = parser.add_argument_group("exports (gzip when a text file's name ends in .gz)")
    for export_format in FORMATS:
        group.add_argument(export_format.flag, metavar="PATH", dest=export_format.name,
                           help=f"write {export_format.help}")
    weighted = [f.title for f in FORMATS if "metric" in f.options]
    group.add_argument("--metric", choices=METRICS, default="median",
                       help=f"per-node weight of the {', '.join(weighted[:-1])} and "
                            f"{weighted[-1]} (default: median)")


def write_exports(profile, args: argparse.Namespace) -> None:
    """Write every export requested in ``args``; say what was written on stderr."""
    for export_format in FORMATS:
        path = getattr(args, export_format.name, None)
        if path:
            options = {option: getattr(args, option) for option in export_format.options}
            profile.export(path, export_format.name, **options)  # an HTML page with advice
            print(f"wrote {export_format.title} to {path}", file=sys.stderr)


def add_parser(subparsers) -> None:
    """Register `report` on the `pyfxprof` sub-command parser."""
    parser = subparsers.add_parser(
        "report", help="re-render a saved profile (table, traces, flame graph, plot)",
        description="Print the table of a profile saved with Profile.save / --save and "
                    "optionally export it.")
    parser.add_argument("profile", metavar="PROFILE",
                        help="a saved profile, or the ranks.json of a distributed job "
                             "(.json or .json.gz)")
    add_table_arguments(parser)
    add_latency_arguments(parser)
    add_export_arguments(parser)
    parser.add_argument("--rank-traces", metavar="DIR",
                        help="ranks.json only: one trace per rank with distributedInfo "
                             "(Holistic Trace Analysis reads the directory)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the profile (or the gathered ranks of a distributed job), print its table, write
    the requested exports; exit code 0.

    >>> run(build_parser().parse_args(["report", "p.json", "--top", "10"]))  # doctest: +SKIP
    0
    """
    profile = load_profile_or_ranks(args.profile)
    if isinstance(profile, RankProfiles):
        return _report_ranks(profile, args)
    if args.rank_traces:
        raise PyfxprofError(f"--rank-traces writes one trace per rank of a gathered ranks file "
                            f"(ranks.json); {args.profile} is one profile: use --chrome-trace")
    profile = chosen_runs(profile, args)
    print_table(profile, args)
    print_latency(profile, args)
    write_exports(profile, args)
    return 0


def _report_ranks(ranks: RankProfiles, args: argparse.Namespace) -> int:
    """A gathered ranks file: the rank table and stragglers; --chrome-trace writes one process
    row per rank, --rank-traces one file per rank (for HTA), --html the rank report page."""
    asked = [(f, getattr(args, f.name)) for f in FORMATS if getattr(args, f.name, None)]
    single = [f.flag for f, _ in asked if f.rank_writer is None]
    if single:
        raise PyfxprofError(f"{single[0]} renders one profile: run it on one rank's file "
                            f"(rank_R.json next to {args.profile})")
    print_ranks(ranks, args)
    for export_format, path in asked:
        writer = export_format.rank_writer
        assert writer is not None  # single-profile formats were refused above
        takes_top = "top" in inspect.signature(writer).parameters
        writer(ranks, path, **({"top": args.top or 50} if takes_top else {}))
        print(f"wrote {export_format.title} of {len(ranks.ranks)} ranks to {path}",
              file=sys.stderr)
    if args.rank_traces:
        ranks.export_rank_traces(args.rank_traces)
        print(f"wrote one trace per rank to {args.rank_traces}/", file=sys.stderr)
    return 0
