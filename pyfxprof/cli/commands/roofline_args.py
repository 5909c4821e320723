"""`pyfxprof profile --roofline`: the machine's peaks (measured once per machine, cached) and
the roofline's columns in the table (docs/roofline.md)."""

from __future__ import annotations

import argparse

from ...data.profile import Profile
from ...views.report import build_view
from ...views.report_render import render_text, terminal_width
from ...views.roofline_text import TABLE_COLUMNS, profile_roofline, table_columns
from ...errors import PyfxprofError
from ...run.machine_peaks import machine_peaks
from .report import print_table

#: The node table's columns before the roofline's under --roofline.
NODE_COLUMNS = ("index", "name", "target", "median", "pct_total")


def add_roofline_argument(parser: argparse.ArgumentParser) -> None:
    """--roofline."""
    parser.add_argument("--roofline", action="store_true",
                        help="add the roofline's columns (FLOPs, FLOP/s, bytes, intensity, "
                             "bytes/s, bound, "
                             "efficiency with its 95%% interval, headroom) against this "
                             "machine's measured peaks, measured once per machine and cached "
                             "(docs/roofline.md)")


def with_peaks(prof: Profile) -> Profile:
    """`prof` with this machine's peaks for its device in its meta: the cached ones profile()
    stored, else measured now (and cached)."""
    if "machine_peaks" not in prof.meta:
        prof.meta["machine_peaks"] = machine_peaks(prof.meta.get("device") or "cpu")
    return prof


def print_roofline_table(prof: Profile, args: argparse.Namespace) -> None:
    """The node table with the roofline's columns, its header line among the profile's (before
    the rows); with --group-by, the grouped table, the roofline's header and a line saying
    where the module roofline is."""
    frame = profile_roofline(prof)
    if args.group_by is not None:
        print_table(prof, args)
        print(frame.attrs["header"])
        print("(--roofline adds its columns to the node table; per module: "
              "prof.roofline(group_by='module'))")
        return
    text = table_columns(frame).set_index("name")
    nodes = prof.nodes.copy()
    for column in TABLE_COLUMNS:
        nodes[column] = nodes["name"].map(text[column]).fillna("")
    shown = Profile(nodes, prof.samples, prof.run_totals, prof.meta,
                    device_samples=prof.device_samples, run_starts=prof.run_starts,
                    run_noise=prof.run_noise, backward_samples=prof.backward_samples)
    try:
        view = build_view(shown, sort_by=args.sort, top=args.top,
                          columns=list(NODE_COLUMNS + TABLE_COLUMNS))
    except (KeyError, ValueError) as error:
        raise PyfxprofError(f"cannot show this table: {error}") from None
    view.header.insert(len(view.header) - 1, frame.attrs["header"])  # before its "rows:" line
    print(render_text(view, width=terminal_width()))
