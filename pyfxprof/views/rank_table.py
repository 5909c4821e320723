"""The text of a RankProfiles: one line per rank (run total, compute, communication, wait),
then one row per node with its median on each rank, the spread across ranks, the slowest
rank and, for collectives, the time ranks waited in them."""

from __future__ import annotations

from typing import Callable

import html

import pandas as pd

from ..data.files import PathLike, open_output
from ..data.rank_profiles import COMM_COLUMN, RankProfiles
from ..data.units import MISSING, format_ns, format_pct
from ..errors import ArgumentError
from . import report_render

#: Ranks shown as columns of the node table; more ranks show min / median / max only.
MAX_RANK_COLUMNS = 8
SORT_KEYS = ("spread", "median", "max", "wait", "order")


def render_rank_table(ranks: RankProfiles, sort_by: str = "spread",
                      top: int | None = None) -> str:
    """``RankProfiles.table``: header (model, ranks profiled, failures), per-rank summary
    (compute, communication, wait) and the per-node table, as text.

    sort_by: "spread" | "median" | "max" | "wait" (descending) or "order" (execution).
    top: keep the first ``top`` node rows. Beyond MAX_RANK_COLUMNS ranks only min / median /
    max across ranks are shown per node.

    >>> print(render_rank_table(ranks, top=5))   # doctest: +SKIP
    """
    summary, nodes = _views(ranks, sort_by, top)
    nodes.header = [report_render.render_text(summary).lstrip("\n")]  # no header block of its own
    return "\n".join(_header(ranks)) + "\n\n" + report_render.render_text(nodes)


def rank_report_html(ranks: RankProfiles, top: int | None = 50) -> str:
    """One self-contained HTML page: header, per-rank block, stragglers, node table.

    >>> open("ranks.html", "w").write(rank_report_html(ranks))   # doctest: +SKIP
    """
    summary, nodes = _views(ranks, "spread", top)
    title = _header(ranks)[0]
    sections = [("Ranks", report_render.render_html(summary)),
                ("Stragglers", report_render.render_html(_straggler_view(ranks))),
                ("Nodes", report_render.render_html(nodes))]
    body = "\n".join(f"<h2>{html.escape(name)}</h2>\n{part}" for name, part in sections)
    notes = html.escape("\n".join(_header(ranks)[1:]))
    return report_render.html_page(title, f"<pre>{notes}</pre>\n{body}")


def _views(ranks: RankProfiles, sort_by: str, top: int | None) -> tuple:
    """(per-rank View, node View) of the rank table."""
    if sort_by not in SORT_KEYS:
        raise ArgumentError(f"sort_by must be one of {list(SORT_KEYS)}, got {sort_by!r}")
    frame = ranks.to_dataframe()
    if sort_by != "order":
        frame = frame.sort_values(sort_by, ascending=False, kind="stable")
    shown = frame if top is None else frame.head(top)
    columns = _node_columns(ranks.ranks)
    nodes = report_render.View(
        header=[], titles=[c[0] for c in columns], right_aligned=[c[2] for c in columns],
        rows=[[fmt(key, row) for _, fmt, _ in columns] for key, row in shown.iterrows()],
        notes=report_render.rows_left_out(len(frame), len(shown), "nodes", top))
    return _summary_view(ranks.rank_summary()), nodes


def _straggler_view(ranks: RankProfiles) -> report_render.View:
    found = ranks.stragglers()
    columns = [found[c] for c in ("key", "rank", "median", "reference", "excess", "p_value")]
    rows = [[key, f"r{rank}", format_ns(median), format_ns(reference), "+" + format_ns(excess),
             f"{p_value:.2g}"] for key, rank, median, reference, excess, p_value in zip(*columns)]
    return report_render.View(header=[], titles=["Node", "Rank", "Median", "Other ranks", "Excess", "p"],
                       right_aligned=[False] + [True] * 5, rows=rows,
                       notes=[] if rows else ["none: no rank slower beyond run-to-run noise"])


def _header(ranks: RankProfiles) -> list[str]:
    models = sorted({str(p.meta.get("model", "?")) for p in ranks.profiles.values()})
    lines = [f"pyfxprof ranks — {', '.join(models) or '?'} · {len(ranks.profiles)} of "
             f"{ranks.world_size} ranks profiled"]
    lines += [f"rank {rank} FAILED: {message}" for rank, message in ranks.failures.items()]
    return lines + ["compute and communication: sums of node medians per rank; wait: time "
                    "in collectives beyond the fastest rank's"]


def _node_columns(rank_list: list[int]) -> list[tuple]:
    """(title, formatter(key, row), right-aligned) per node table column."""
    columns: list[tuple[str, Callable[..., str], bool]] = [
        ("Node", lambda k, r: k, False),
               ("Comm", lambda k, r: "comm" if r[COMM_COLUMN] else "", False)]
    if len(rank_list) <= MAX_RANK_COLUMNS:
        columns += [(f"r{rank}", lambda k, r, c=f"rank_{rank}": format_ns(r[c]), True)
                    for rank in rank_list]
    else:
        columns += [(title, lambda k, r, c=c: format_ns(r[c]), True)
                    for title, c in (("Min", "min"), ("Median", "median"), ("Max", "max"))]
    return columns + [
        ("Spread", lambda k, r: format_ns(r["spread"]), True),
        ("Spread %", lambda k, r: format_pct(r["spread_pct"]), True),
        ("Slowest", lambda k, r: f"r{r['slowest_rank']}" if r["spread"] > 0 else MISSING, True),
        ("Wait", lambda k, r: format_ns(r["wait"]) if r[COMM_COLUMN] else "", True),
    ]


def _summary_view(summary: pd.DataFrame) -> report_render.View:
    """The per-rank block: runs, run total, compute, communication, wait."""
    rows = [[f"r{rank}", str(int(row["runs"])), format_ns(row["total"]),
             format_ns(row["compute"]), format_ns(row["communication"]), format_ns(row["wait"])]
            for rank, row in summary.iterrows()]
    return report_render.View(header=[], titles=["Rank", "Runs", "Run total", "Compute",
                                          "Communication", "Wait"],
                       right_aligned=[False] + [True] * 5, rows=rows)


def export_rank_report_html(ranks: RankProfiles, path: PathLike, top: int | None = 50) -> None:
    """Write :func:`rank_report_html` to ``path`` (open it in any browser).

    >>> export_rank_report_html(ranks, "ranks.html")   # doctest: +SKIP
    """
    with open_output(path) as stream:
        stream.write(rank_report_html(ranks, top=top))
