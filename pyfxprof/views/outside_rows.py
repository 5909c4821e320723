"""The Python functions that spend the `(Python outside the graph)` row, as lines under that
row in the report's table (data.outside_graph.python_functions; the module tree's lines are
data.outside_graph.tree_rows)."""

from __future__ import annotations

from typing import Callable

from ..data.outside_graph import OUTSIDE_GRAPH, SHOWN_FUNCTIONS, call_figure, python_functions
from ..data.units import format_ns, format_pct

#: The cells a function line fills, by report column; the others stay blank.
_FUNCTION_CELLS = ("name", "op", "target", "median", "pct_total")


def _cells(row, call_ns: float) -> dict[str, str]:
    share = 100.0 * float(row["self_ns"]) / call_ns if call_ns else float("nan")
    return {"name": f"  └ {row['function']}", "op": str(row["origin"]),
            "target": f"{row['file_line']} ×{float(row['calls']):g}".strip(),
            "median": format_ns(float(row["self_ns"])), "pct_total": format_pct(share)}


def with_function_rows(profile, columns: list[str], rows: list[list[str]], names: list[str],
                       fit: Callable[[str, str], str]) -> list[list[str]]:
    """`rows` (formatted, their node names `names`) with SHOWN_FUNCTIONS lines under the
    outside row: per function its name, origin, file:line and calls per call, its share of
    the row as ns and as percent of the user's call; each cell cut by `fit(column, text)`
    as the table cuts its own."""
    if OUTSIDE_GRAPH not in names or "name" not in columns:
        return rows
    functions = python_functions(profile, top=SHOWN_FUNCTIONS)
    call_ns = call_figure(profile.meta.get("call"), "median_ns") or 0.0
    lines = [[fit(c, _cells(row, call_ns)[c]) if c in _FUNCTION_CELLS else "" for c in columns]
             for row in functions.to_dict("records")]
    at = names.index(OUTSIDE_GRAPH) + 1
    return rows[:at] + lines + rows[at:]
