"""The user's call as the denominator: the `(Python outside the graph)` row (each run's own
call, made around its instrumented graph, minus the run's rows, at the plain call's level)
and its breakdown by Python function.

A graph replays the model's ops without the Python around them (module calls, mask building,
output wrappers). `profile()` makes each instrumented run inside the user's own call and times the
plain call after the runs (run/user_call.py); the difference becomes a row of its own when it is above the noise, and `Total %`, coverage and
rankings become shares of the call (docs/profile.md, "The user's call").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..stats.columns import column_medians, masked_row_sums, widened
from ..stats.order_statistics import median_interval
from .profile import Profile
from .validate import OUTSIDE_GRAPH_OP, model_nodes, run_coverage

#: The row's name (its op, OUTSIDE_GRAPH_OP, is one of validate.NOT_NODES: not a model node).
OUTSIDE_GRAPH = "(Python outside the graph)"
#: Functions named under the row in tables and trees (all kept ones go to the flame graph).
SHOWN_FUNCTIONS = 5


def call_level(call_ns, around_ns, paired_ns=None) -> float:
    """What the user's plain calls `call_ns` spend beyond the calls made around the graph's
    runs (the Python the graph replaced, less the timers' cost), ns. With `paired_ns` (calls
    around the graph, the i-th made right beside the i-th plain call): the median of the
    pairs' differences, each pair from one stretch of the host's speed (a shared machine
    slows every call by its own factor for tenths of a second: a block of plain calls timed
    after the runs may fall in another stretch than the runs, docs/profile.md); else
    ``median(call_ns) - median(around_ns)``.

    >>> call_level([500, 900, 510], [200, 205, 210], paired_ns=[410, 800, 400])
    100.0
    >>> call_level([500, 900, 510], [200, 205, 210])
    305.0
    """
    call = np.asarray(call_ns, dtype=np.float64)
    if paired_ns is not None and len(paired_ns) == len(call) and len(call):
        return float(np.median(call - np.asarray(paired_ns, dtype=np.float64)))
    return float(np.median(call) - np.median(np.asarray(around_ns, dtype=np.float64)))


def outside_runs(call_ns, rows_ns, around_ns=None, leveled: bool = True,
                 paired_ns=None) -> np.ndarray:
    """Per run, the Python outside the graph (float ns; negative: noise). With `around_ns`
    (each run's own call, made around its instrumented graph: run.user_call.AroundRuns):
    that call minus the run's rows, plus (`leveled`) the level (call_level of `call_ns`
    against `paired_ns`, else against `around_ns`: the Python the graph replaced), the same
    for every run: each run's figure comes from its own invocation. Not `leveled` (a
    compiled call, whose call around the run is the user's whole call: with_compiled_call):
    that call minus the run's rows alone. Without `around_ns`: ``median(call_ns) -
    median(rows_ns)`` in every run (one figure: the plain calls are other invocations than
    the runs, so no run's figure is taken from them).

    >>> outside_runs([500, 520, 510], [100, 300, 100], [200, 400, 210]).tolist()
    [400.0, 400.0, 410.0]
    >>> outside_runs([500, 520, 510], [100, 300, 100], [200, 400, 210], leveled=False).tolist()
    [100.0, 100.0, 110.0]
    >>> outside_runs([500, 520, 510], [100, 300, 100]).tolist()
    [410.0, 410.0, 410.0]
    """
    rows = np.asarray(rows_ns, dtype=np.float64)
    if around_ns is None:
        return np.full(len(rows), float(np.median(np.asarray(call_ns)) - np.median(rows)))
    around = np.asarray(around_ns, dtype=np.float64)
    level = call_level(call_ns, around, paired_ns) if leveled else 0.0
    return around - rows + level


def call_meta(call_ns, graph_ns, rows_ns=None, around_ns=None, leveled: bool = True,
              paired_ns=None) -> dict:
    """``meta["call"]`` of the user's plain calls `call_ns` against the graph's runs
    `graph_ns` (whose rows summed to `rows_ns` per run; default: the runs) and, when the runs
    were made inside the user's calls, those calls' `around_ns` (one per run): the call's
    median (``median_ns``: with `around_ns`, the calls around the runs at the plain level,
    so every figure of the header comes from the runs' own block; those calls as they are
    where a level from noisy pairs would make it 0 or less; ``plain_median_ns``: the
    plain calls as timed, in a block after the runs), the graph's median, the median of outside_runs (the Python outside the graph: every
    part of the call no row of the graph holds; `leveled` as there) with its 95% interval
    (per run with `around_ns`; else of each plain call against the rows' median),
    ``per_run`` (whether the row is measured per run: `around_ns` given), ``level_ns`` (call_level:
    what the plain calls spend beyond the calls around the graph, against `paired_ns` where
    given; outside_runs' level, in the row only when `leveled`) and ``resolved``: the interval lies above zero (stats/order_statistics.py; which takes at
    least runs_needed(0.5) runs: with fewer, no order statistic bounds the median, and the
    low and high ends are the range).

    >>> meta = call_meta([300, 310, 305, 290, 300, 320], [100, 100, 110, 90, 100, 100])
    >>> meta["outside_median_ns"], meta["resolved"], meta["per_run"]
    (202.5, True, False)
    >>> around = call_meta([300] * 6, [100] * 6, around_ns=[250, 260, 250, 240, 250, 250])
    >>> around["outside_median_ns"], around["level_ns"], around["per_run"], around["median_ns"]
    (200.0, 50.0, True, 300.0)
    >>> call_meta([100] * 6, [90] * 6, around_ns=[400] * 6, paired_ns=[500] * 6)["median_ns"]
    400.0
    """
    call = np.asarray(call_ns, dtype=np.int64)
    graph = np.asarray(graph_ns, dtype=np.int64)
    rows = graph if rows_ns is None else np.asarray(rows_ns, dtype=np.int64)
    outside = outside_runs(call, rows, around_ns, leveled, paired_ns)
    spread = outside if around_ns is not None else call - float(np.median(rows))
    low, high = median_interval(spread)
    resolved = bool(low > 0)  # an unbounded interval (too few runs) is never above zero
    if math.isinf(low):  # fewer than runs_needed(0.5) runs: their range, never resolved
        low, high = (float(spread.min()), float(spread.max())) if len(spread) \
            else (math.nan, math.nan)
    meta = {"median_ns": float(np.median(call)), "runs": int(len(call)),
            "plain_median_ns": float(np.median(call)),
            "graph_median_ns": float(np.median(graph)),
            "outside_median_ns": float(np.median(outside)),
            "outside_low_ns": low, "outside_high_ns": high,
            "resolved": resolved,
            "per_run": around_ns is not None}
    if around_ns is not None:
        meta["around_median_ns"] = float(np.median(np.asarray(around_ns, dtype=np.int64)))
        meta["level_ns"] = call_level(call, around_ns, paired_ns)
        leveled_call = meta["around_median_ns"] + meta["level_ns"]
        # a level from noisy pairs can exceed the call itself: then the runs' own calls
        meta["median_ns"] = leveled_call if leveled_call > 0 else meta["around_median_ns"]
    return meta


def blank_cell(series: pd.Series) -> Any:
    """The empty value of a nodes column (False, 0, NaN, () or "" as its type; else None):
    what a row with nothing measured (the outside row, training's loss row) holds in it.

    Example:
        >>> [blank_cell(pd.Series(v)) for v in ([True], [3], [0.5], [("a",)], ["x"])]
        [False, 0, nan, (), '']
    """
    if pd.api.types.is_bool_dtype(series):
        return False
    if pd.api.types.is_integer_dtype(series):
        return 0
    if pd.api.types.is_float_dtype(series):
        return math.nan
    first = next((v for v in series.tolist() if v is not None), None)
    return () if isinstance(first, tuple) else "" if isinstance(first, str) else None


def _with_row(nodes: pd.DataFrame, root_type: str) -> pd.DataFrame:
    """`nodes` with the outside row appended (every extra column blank)."""
    row = {"index": len(nodes), "name": OUTSIDE_GRAPH, "op": OUTSIDE_GRAPH_OP,
           "target": "Python outside the graph (module calls, glue)",
           "module_path": "", "module_type": root_type, "module_stack": ()}
    row.update({c: -1 if c == "graph" else blank_cell(nodes[c])  # -1: no graph's, as between
                for c in nodes.columns if c not in row})
    extended = pd.concat([nodes, pd.DataFrame([row], columns=nodes.columns)],
                         ignore_index=True)
    for column in nodes.columns:  # keep each column's dtype (concat may widen it)
        if extended[column].dtype != nodes[column].dtype and len(nodes):
            try:
                extended[column] = extended[column].astype(nodes[column].dtype)
            except (TypeError, ValueError):
                pass
    return extended


def _in_run(nodes: pd.DataFrame) -> np.ndarray:
    """Mask of the rows that are part of a run (all but user ranges): what the rows sum."""
    return (nodes["op"] != "range").to_numpy(dtype=bool)


def rows_share(samples: np.ndarray, nodes: pd.DataFrame, call_median_ns: float) -> float | None:
    """The sum of the rows' medians (as the table shows them, user ranges left out) as a
    share (0..1) of the user's call median, or None without runs or a call.

    >>> nodes = pd.DataFrame({"op": ["call_function", "outside_graph", "range"]})
    >>> rows_share(np.array([[30, 60, 90], [50, 40, 90]]), nodes, 100.0)
    0.9
    """
    if not call_median_ns or not samples.shape[0]:
        return None
    return float(column_medians(samples, _in_run(nodes)).sum()) / float(call_median_ns)


def _call_figures(profile: Profile, call_ns, around_ns, leveled: bool = True,
                  paired_ns=None, **extra: Any) -> tuple[dict, np.ndarray, Any]:
    """(a copy of the profile's meta with ``meta["call"]`` set (call_meta, `leveled`,
    `paired_ns`, `extra`), each run's rows summed, `around_ns` or None when it does not hold one call per
    run: then ``meta["call"]["not_per_run"]`` says why)."""
    meta = dict(profile.meta)
    rows = masked_row_sums(profile.samples, _in_run(profile.nodes))
    not_per_run = None
    if around_ns is not None and len(around_ns) != profile.n_runs:
        not_per_run = f"{len(around_ns)} calls around {profile.n_runs} runs"
        around_ns = None
    meta["call"] = {**call_meta(call_ns, profile.run_totals, rows, around_ns, leveled,
                                paired_ns), **extra}
    if not_per_run is not None:
        meta["call"]["not_per_run"] = not_per_run
    return meta, rows, around_ns


def with_outside_graph(profile: Profile, call_ns, functions: list | None = None,
                       around_ns=None, spare: np.ndarray | None = None,
                       paired_ns=None) -> Profile:
    """`profile` (the graph's runs) measured against the user's plain calls `call_ns` and,
    when its runs were made inside the user's calls, those calls (`around_ns`, one per run,
    in run order) and the calls around the graph made beside the plain ones (`paired_ns`:
call_level): ``meta["call"]`` (call_meta, plus the ``functions`` that spend the
    difference, see python_functions, ``rows_share``: the rows' medians summed, as a share
    of the call's median, and ``not_per_run`` when `around_ns` does not match the runs) and,
    when the difference is above the noise, the OUTSIDE_GRAPH row (outside_runs, at least 0:
    the Python of the call no row holds, the graph's own time between its nodes included),
    run totals that are the rows plus that row, and coverage of the call
    (``meta["graph_coverage"]`` keeps the graph's). Without `around_ns` the row is one
    figure in every run: per-run analyses (tail, p99, drift, warm-up) see the graph's only.
    The row is written into `spare` when the samples are its first columns (the run table
    reserved it: stats.columns.widened), else into a copy of them.

    >>> nodes = pd.DataFrame({"index": [0], "name": ["mm"], "op": ["call_function"],
    ...     "target": ["mm"], "module_path": [""], "module_type": ["M"], "module_stack": [()]})
    >>> graph = Profile(nodes, np.array([[90]] * 6), np.array([100] * 6), {"coverage": 0.9})
    >>> calls = [300, 310, 305, 290, 300, 320]
    >>> prof = with_outside_graph(graph, calls, around_ns=[290, 300, 295, 280, 290, 310])
    >>> prof.nodes["name"].tolist(), prof.run_totals.tolist()[:2], round(prof.meta["coverage"], 3)
    (['mm', '(Python outside the graph)'], [300, 310], 0.298)
    >>> with_outside_graph(graph, calls).samples[:, 1].tolist()  # one figure: not per run
    [212, 212, 212, 212, 212, 212]
    """
    meta, rows, around_ns = _call_figures(profile, call_ns, around_ns, paired_ns=paired_ns,
                                          functions=list(functions or []))
    if not meta["call"]["resolved"]:
        meta["call"]["rows_share"] = rows_share(profile.samples, profile.nodes,
                                                meta["call"]["median_ns"])
        return Profile(profile.nodes, profile.samples, profile.run_totals, meta,
                       profile.device_samples, profile.run_starts, profile.run_noise,
                       profile.backward_samples)
    outside = np.maximum(np.rint(outside_runs(call_ns, rows, around_ns, paired_ns=paired_ns)),
                         0).astype(np.int64)
    add = lambda array: None if array is None else np.hstack(  # noqa: E731
        [array, np.zeros((array.shape[0], 1), np.int64)])
    samples = widened(profile.samples, outside, spare)
    totals = rows + outside
    nodes = _with_row(profile.nodes, str(profile.nodes["module_type"].iloc[0])
                      if profile.n_nodes else "model")
    meta["call"]["rows_share"] = rows_share(samples, nodes, meta["call"]["median_ns"])
    if "coverage" in meta:
        meta["graph_coverage"] = meta["coverage"]
        meta["coverage"] = run_coverage(samples, totals, model_nodes(nodes))
    return Profile(nodes, samples, totals, meta, add(profile.device_samples),
                   profile.run_starts, profile.run_noise, add(profile.backward_samples))


def with_compiled_call(profile: Profile, call_ns, around_ns=None, paired_ns=None) -> Profile:
    """A compiled profile (kernels, the time between graphs, the `(outside kernels)` row
    last) measured against the user's compiled calls: each run made inside the user's call
    (`around_ns`, one per run: torch.compile's guards, wrapper and kernels, all of the call
    but its outer module call), the outside row widened to that run's own call beyond its
    rows (outside_runs, not leveled), so each run's rows sum to its own call: no figure of a
    run comes from another invocation. The plain calls `call_ns` (timed after the runs) are
    the check: ``meta["call"]`` (call_meta: their median, ``level_ns`` what they spend beyond
    the calls around the runs, against `paired_ns` where given; rows_share: the rows' medians summed against them). Without
    `around_ns` (the runs were not made inside the call) the row takes the plain calls'
    median beyond the rows' median, one figure in every run. ``meta["call"]["compiled"]``
    marks it (the header words it so).

    >>> nodes = pd.DataFrame({"index": [0, 1], "name": ["k0", "(outside kernels)"],
    ...     "op": ["call_function", "outside_kernels"], "target": "", "module_path": "",
    ...     "module_type": "M", "module_stack": [(), ()]})
    >>> runs = Profile(nodes, np.array([[60, 40]] * 6), np.array([100] * 6), {})
    >>> prof = with_compiled_call(runs, [150] * 6, around_ns=[130] * 6)
    >>> prof.samples[0].tolist(), int(prof.run_totals[0]), prof.meta["call"]["level_ns"]
    ([60, 70], 130, 20.0)
    >>> with_compiled_call(runs, [150] * 6).samples[0].tolist()  # not per run: the plain level
    [60, 90]
    """
    meta, rows, around_ns = _call_figures(profile, call_ns, around_ns, leveled=False,
                                          paired_ns=paired_ns, compiled=True)
    beyond = np.rint(outside_runs(call_ns, rows, around_ns, leveled=False)).astype(np.int64)
    samples = profile.samples.copy()
    samples[:, -1] = np.maximum(samples[:, -1] + beyond, 0)
    meta["call"]["rows_share"] = rows_share(samples, profile.nodes, meta["call"]["median_ns"])
    totals = masked_row_sums(samples, _in_run(profile.nodes))
    if "coverage" in meta:
        meta["coverage"] = run_coverage(samples, totals, model_nodes(profile.nodes))
    return Profile(profile.nodes, samples, totals, meta, profile.device_samples,
                   profile.run_starts, profile.run_noise, profile.backward_samples)


def graph_only(profile: Profile) -> Profile:
    """`profile` without the OUTSIDE_GRAPH row: the graph's rows, its runs' totals the sum of
    those rows (the graph's time between its nodes went to the row: it is not restored)
    and its coverage; itself when it has no such row.

    >>> nodes = pd.DataFrame({"index": [0], "name": ["mm"], "op": ["call_function"],
    ...     "target": ["mm"], "module_path": [""], "module_type": ["M"], "module_stack": [()]})
    >>> graph = Profile(nodes, np.array([[90]] * 6), np.array([100] * 6), {})
    >>> both = with_outside_graph(graph, [300, 310, 305, 290, 300, 320])
    >>> again = graph_only(both)
    >>> again.nodes["name"].tolist(), again.run_totals.tolist()[:2]
    (['mm'], [90, 90])
    """
    column = outside_column(profile)
    if column is None:
        return profile
    keep = np.arange(profile.n_nodes) != column
    drop = lambda array: None if array is None else array[:, keep]  # noqa: E731
    meta = dict(profile.meta)
    if "graph_coverage" in meta:
        meta["coverage"] = meta.pop("graph_coverage")
    return Profile(profile.nodes[keep].reset_index(drop=True), profile.samples[:, keep],
                   profile.run_totals - profile.samples[:, column], meta,
                   drop(profile.device_samples), profile.run_starts, profile.run_noise,
                   drop(profile.backward_samples))


def summed_rows(profile: Profile) -> Profile:
    """`profile` with run totals that are each run's rows summed (user ranges left out),
    the totals graph_only leaves a profile that had the OUTSIDE_GRAPH row: two profiles
    compared as graphs (analyses.diff.like_totals) then total the same way.

    >>> nodes = pd.DataFrame({"index": [0], "name": ["mm"], "op": ["call_function"],
    ...     "target": ["mm"], "module_path": [""], "module_type": ["M"], "module_stack": [()]})
    >>> summed_rows(Profile(nodes, np.array([[90]] * 6), np.array([100] * 6), {})).run_totals[:2]
    array([90, 90])
    """
    totals = masked_row_sums(profile.samples, _in_run(profile.nodes))
    return Profile(profile.nodes, profile.samples, totals, dict(profile.meta),
                   profile.device_samples, profile.run_starts, profile.run_noise,
                   profile.backward_samples)


def call_figure(call, key: str) -> float | None:
    """``call[key]`` as a finite float, or None (a saved file's meta may hold anything).

    >>> call_figure({"median_ns": 5}, "median_ns"), call_figure({"median_ns": "x"}, "median_ns")
    (5.0, None)
    """
    value = call.get(key) if isinstance(call, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def outside_column(profile: Profile) -> int | None:
    """The samples column of the OUTSIDE_GRAPH row, or None."""
    found = np.flatnonzero((profile.nodes["op"] == OUTSIDE_GRAPH_OP).to_numpy())
    return int(found[0]) if found.size else None


def _is_function(row) -> bool:
    """A breakdown entry as python_breakdown writes it (a saved file may hold anything)."""
    return (isinstance(row, dict) and all(isinstance(row.get(k), str) for k in
                                          ("function", "origin", "file_line"))
            and all(call_figure(row, k) is not None for k in ("calls", "self_ns")))


def python_functions(profile: Profile, top: int | None = None) -> pd.DataFrame:
    """``Profile.python_outside``: the Python functions that spend the `(Python outside the
    graph)` row, largest first (the folded rest last): ``function``,
    ``origin`` (model, torch, transformers, builtin...), ``file_line``, ``calls`` (per
    call), ``self_ns`` (the row's median shared in proportion to each function's self time
    measured on untimed profiled calls, see docs/profile.md) and ``share`` (0..1 of the
    row). Empty when there is no row or no breakdown was measured.

    >>> prof.python_outside(top=5)  # doctest: +SKIP
    """
    call = profile.meta.get("call")
    functions = call.get("functions") if isinstance(call, dict) else None
    rows = [dict(row) for row in functions if _is_function(row)] if isinstance(
        functions, list) else []
    column = outside_column(profile)
    columns = ["function", "origin", "file_line", "calls", "self_ns", "share"]
    if column is None or not rows:
        return pd.DataFrame(columns=columns)
    measured = float(sum(max(float(row.get("self_ns", 0.0)), 0.0) for row in rows))
    row_median = float(np.median(profile.samples[:, column]))
    frame = pd.DataFrame(rows).reindex(columns=columns[:-1])
    frame["share"] = frame["self_ns"].clip(lower=0.0) / measured if measured else 0.0
    frame["self_ns"] = frame["share"] * row_median
    rest = frame["function"].str.startswith("(other ")  # the folded rest stays last
    frame = frame.assign(_rest=rest).sort_values(["_rest", "self_ns"], ascending=[True, False],
                                                 kind="stable")
    frame = frame.drop(columns="_rest").reset_index(drop=True)
    return frame if top is None else frame.iloc[:top]


def call_share(profile: Profile) -> float | None:
    """The outside row's median as a share (0..1) of the user's call median, or None."""
    column, call = outside_column(profile), call_figure(profile.meta.get("call"), "median_ns")
    if column is None or not call:
        return None
    return float(np.median(profile.samples[:, column])) / call


def function_label(row) -> str:
    """'Module._call_impl [torch] ×12' for a row of python_functions.

    >>> function_label({"function": "Net.forward", "origin": "model", "calls": 1.0})
    'Net.forward [model] ×1'
    """
    calls = float(row["calls"])
    count = f"{calls:g}" if calls < 100 else f"{calls:.0f}"
    return f"{row['function']} [{row['origin']}] ×{count}" if row["origin"] else row["function"]


def tree_rows(profile: Profile) -> list[tuple[str, float]]:
    """(label, median ns) of the module tree's lines for the outside row, a child of the
    root, and its SHOWN_FUNCTIONS top functions under it; [] without the row."""
    column = outside_column(profile)
    if column is None:
        return []
    functions = python_functions(profile, top=SHOWN_FUNCTIONS).to_dict("records")
    rows = [(f"└─ {OUTSIDE_GRAPH}", float(np.median(profile.samples[:, column])))]
    for i, row in enumerate(functions):
        branch = "└─" if i == len(functions) - 1 else "├─"
        rows.append((f"   {branch} {function_label(row)}", float(row["self_ns"])))
    return rows
