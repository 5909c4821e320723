"""--latency, --tail Q, --tail-sort and --exclude-preempted: the latency views of a profile
(shared by `pyfxprof profile` and `pyfxprof report`; see docs/latency.md)."""

from __future__ import annotations

import argparse

from ...data.tail import SORT_KEYS
from ...views.latency_text import render_tail
from ...data.units import format_ns, plural
from .arg_types import open_unit_interval, positive_int


def add_latency_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the latency options on ``parser``.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_latency_arguments(parser)
        >>> parser.parse_args(["--tail", "0.99"]).tail
        0.99
    """
    group = parser.add_argument_group("latency (docs/latency.md)")
    group.add_argument("--latency", action="store_true",
                       help="print the run-total distribution: p50, p90, p99 (with a 95%% CI), "
                            "p99.9, max, preempted runs, warm-up")
    group.add_argument("--tail", type=open_unit_interval, metavar="Q",
                       help="print which nodes make the runs at or above quantile Q slow "
                            "(e.g. 0.99)")
    group.add_argument("--tail-sort", choices=SORT_KEYS, default="excess",
                       help="order of the --tail rows: excess in the tail runs (default) or "
                            "share of the run-to-run variance")
    group.add_argument("--tail-top", type=positive_int, default=20, metavar="N",
                       help="rows of the --tail table (default 20)")
    group.add_argument("--exclude-preempted", action="store_true",
                       help="leave out the runs during which the profiling thread was "
                            "preempted (every table and statistic)")


def chosen_runs(profile, args: argparse.Namespace):
    """``profile`` without its preempted runs when --exclude-preempted was given."""
    return profile.without_preempted() if args.exclude_preempted else profile


def print_latency(profile, args: argparse.Namespace) -> None:
    """Print what --latency and --tail ask for (nothing when neither was given)."""
    if args.latency:
        print()
        print(profile.latency())
        print(profile.warmup())
        slow = profile.node_warmup().head(5)
        for row in slow.itertuples():
            print(f"  first-call cost: {row.name} slower for {plural(row.warmup_runs, 'run')} "
                  f"({format_ns(row.warmup_ns)} then, steady {format_ns(row.steady_ns)})")
    if args.tail is not None:
        print()
        print(render_tail(profile.tail(args.tail, sort_by=args.tail_sort), top=args.tail_top))
