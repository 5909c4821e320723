"""A Profile's report: header block, table, notes.

A report is built once as a :class:`View` (all cells already formatted strings), then
rendered as aligned text or as HTML (report_render.py), so both always show the same thing. Output is
deterministic: ties in sorting keep execution order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import rollup
from ..stats.node_statistics import (STAT_COLUMNS, STAT_UNITS, STATISTICS,
                                     backward_statistics, cumulative_pct, group_samples,
                                     node_statistics, noisy_mask, relative_iqr, with_flop_rate)
from ..data.units import MISSING, elide, format_ns, format_pct, format_si
from ..errors import ArgumentError, PyfxprofError, whole_number
from .module_tree import module_tree
from .outside_rows import with_function_rows
from .report_header import profile_header
from .report_render import View, render_html, render_text, rows_left_out, terminal_width
from .safe_text import terminal_text

#: Row orders of table(): the statistics that are sort keys (STATISTICS), then name and order.
SORT_KEYS = tuple(s.name for s in STATISTICS if s.sort) + ("name", "order")
#: torch.profiler's sort keys accepted by table(): the column each sorts the nodes by (a node's
#: self and total time are the same node time; "count" is equal for every node: order kept).
TORCH_SORT_KEYS = {
    "cpu_time_total": "total", "self_cpu_time_total": "total", "cpu_time": "mean",
    "count": "order", "cpu_memory_usage": "cpu_alloc_bytes",
    "self_cpu_memory_usage": "cpu_alloc_bytes",
    **{f"{p}{d}_time_total": "device_total" for d in ("cuda", "device") for p in ("", "self_")},
    **{f"{d}_time": "device_mean" for d in ("cuda", "device")},
    **{f"{p}{d}_memory_usage": "cuda_alloc_bytes" for d in ("cuda", "device")
       for p in ("", "self_")},
}
#: Row order when none is asked for: the per-node median, which one preempted (or otherwise
#: disturbed) run cannot move, unlike "total", a sum over every run (docs/profile.md).
DEFAULT_SORT = "median"
#: The header's line saying how rows are ordered, per sort key.
_SORT_TEXT = {**{s.name: s.sort for s in STATISTICS if s.sort}, "name": "name",
              "order": "execution order"}
GROUP_KEYS = ("op", "target", "module_type", "module", "input_shape", "source")
#: The statistics shown by default: the default sort's first, then STATISTICS' order.
SHOWN_STATISTICS = (DEFAULT_SORT,) + tuple(s.name for s in STATISTICS
                                           if s.shown and s.name != DEFAULT_SORT)
NODE_DEFAULT_COLUMNS = (("index", "name", "op", "target", "module_path") + SHOWN_STATISTICS
                        + ("cum_pct",))
#: Node columns by default when the profile has device (GPU) samples.
DEVICE_DEFAULT_COLUMNS = ("index", "name", "op", "target", "module_path", "median",
                          "device_median", "device_pct_total", "launch_bound", "pct_total",
                          "cum_pct")
#: Node columns by default for training steps (profiles with backward samples).
BACKWARD_DEFAULT_COLUMNS = ("index", "name", "op", "target", "module_path", "median",
                            "backward_median", "backward_ratio", "pct_total", "cum_pct")
#: Shown by default, before `Total %`, when the profile measured them (profile_memory=True).
MEMORY_DEFAULT_COLUMNS = ("cpu_alloc_bytes", "cpu_peak_bytes", "cuda_alloc_bytes",
                          "cuda_peak_bytes")
GROUP_COLUMNS = ("group", "nodes") + STAT_COLUMNS + ("cum_pct",)
GROUP_DEFAULT_COLUMNS = ("group", "nodes") + SHOWN_STATISTICS + ("cum_pct",)
#: Rows shown by Profile._repr_html_ (notebooks).
HTML_TOP = 50
#: Longest cell in characters; longer ones are cut with an ellipsis.
MAX_CELL_WIDTH = 32
#: Longest cell of the shape columns, which are long and worth reading.
MAX_SHAPES_WIDTH = 64
_KEEP_TAIL = frozenset({"target", "module_path", "module_stack"})
_TITLES = {
    **{statistic.name: statistic.title for statistic in STATISTICS},
    "index": "#", "name": "Node", "op": "Op type", "target": "Op", "module_path": "Module",
    "module_type": "Module type", "module_stack": "Module stack", "cum_pct": "Cum %",
    "nodes": "Nodes",
    "launch_bound": "Launch-bound", "input_shapes": "Input shapes",
    "output_shapes": "Output shapes", "flops": "FLOPs", "flop_per_s": "FLOP/s",
    "out_bytes": "Out bytes", "peak_bytes": "Peak bytes", "alloc_delta_bytes": "Alloc delta",
    "cpu_alloc_bytes": "CPU alloc", "cpu_freed_bytes": "CPU freed", "cpu_peak_bytes": "CPU peak",
    "cuda_alloc_bytes": "CUDA alloc", "cuda_freed_bytes": "CUDA freed",
    "cuda_peak_bytes": "CUDA peak", "source": "Source",
    "backward_ratio": "Bwd/Fwd", "calls": "Calls",
    "alone_ns": "Alone", "alone_low_ns": "Alone low", "alone_high_ns": "Alone high",
    "alone_ratio": "Row/alone", "alone_note": "Alone: how",
}
#: The node alone beside its row (run/alone.py), after the median, where nodes were timed alone.
ALONE_COLUMNS = ("alone_ns", "alone_ratio")
#: What an outside row is, for the note on blank Alone cells (rows of these ops are no call).
_NOT_A_CALL = ("outside_graph", "between_graphs", "outside_kernels", "range")
_GROUP_TITLES = {"op": "Op type", "target": "Op", "module_type": "Module type",
                 "module": "Module", "input_shape": "Op", "source": "Source"}
_NOISE_HINT = "consider more runs or pinning threads"
#: Noisy rows named in the one-line note.
NOISY_NAMES = 4
#: Columns left out first, in this order, when a table must fit the terminal: the droppable
#: statistics go from the right, after the op type, module and cumulative columns.
DROP_ORDER = (("op", "module_path", "cum_pct")
              + tuple(reversed([s.name for s in STATISTICS if s.droppable])) + ("index", "nodes"))


def _choice(name: str, value, valid) -> None:
    if value not in valid:
        raise ArgumentError(f"{name} must be one of {list(valid)}, got {value!r}")


def _group_keys(nodes: pd.DataFrame, group_by: str, depth: int) -> list:
    """One group key per node: a nodes column, a module at ``depth``, or (op, input shapes)."""
    if group_by == "module":
        return rollup.module_keys(nodes, depth)
    if group_by == "input_shape":
        return rollup.input_shape_keys(nodes)
    if group_by == "source" and "source" not in nodes:
        raise PyfxprofError("group_by='source' needs source lines: profiles made by this "
                            "pyfxprof version have a source column (FX and Dynamo captures)")
    return nodes[group_by].tolist()


def _group_frame(profile, group_by: str, depth: int = 1) -> pd.DataFrame:
    """Statistics of per-run sums over nodes sharing ``group_by``, first-appearance order;
    summed ``flops`` and ``flop_per_s`` when the nodes have flops."""
    keys = _group_keys(profile.nodes, group_by, depth)
    names, grouped = group_samples(profile.samples, keys)
    counts = pd.Series(keys, dtype=object).value_counts(sort=False)
    frame = node_statistics(grouped)
    if profile.backward_samples is not None:
        frame = pd.concat([frame, backward_statistics(
            grouped, group_samples(profile.backward_samples, keys)[1])], axis=1)
    frame.insert(0, "group", pd.Series(names, dtype=object))
    frame.insert(1, "nodes", counts.reindex(names).to_numpy(dtype=np.int64))
    if group_by == "input_shape":
        split = [rollup.split_shape_key(name) for name in names]
        frame["group"] = pd.Series([target for target, _ in split], dtype=object)
        frame.insert(1, "input_shapes", pd.Series([shapes for _, shapes in split], dtype=object))
    if "flops" in profile.nodes:
        flops = pd.to_numeric(profile.nodes["flops"], errors="coerce")
        frame["flops"] = flops.groupby(np.asarray(keys, dtype=object), sort=False).sum().reindex(
            names).to_numpy()
    for device in ("cpu", "cuda"):  # profile_memory=True: allocated, freed, peak per group
        if f"{device}_live_bytes" in profile.nodes:
            for column, values in rollup.group_memory(profile.nodes, keys, names, device).items():
                frame[column] = values
    return with_flop_rate(frame)


def sorted_rows(frame: pd.DataFrame, sort_by: str, name_column: str | None = None,
                ascending: tuple = (), by_size: tuple = ()) -> pd.DataFrame:
    """A table's rows (a DataFrame) in display order, stable so ties keep the frame's order:
    "order" as they are, "name" by ``name_column`` (None: the index), a column of
    ``ascending`` smallest first, of ``by_size`` largest absolute value first, any other
    column largest first.

    >>> frame = pd.DataFrame({"name": ["b", "a", "c"], "diff": [1, -3, 2]})
    >>> list(sorted_rows(frame, "diff").name)
    ['c', 'b', 'a']
    >>> list(sorted_rows(frame, "diff", by_size=("diff",)).name)
    ['a', 'c', 'b']
    """
    if sort_by == "order":
        return frame
    if sort_by == "name":
        return (frame.sort_index(kind="stable") if name_column is None
                else frame.sort_values(name_column, kind="stable"))
    key = (lambda column: column.abs()) if sort_by in by_size else None
    return frame.sort_values(sort_by, ascending=sort_by in ascending, kind="stable", key=key)


def _cell(column: str, value) -> str:
    """One formatted cell: time stats in auto units, percentages, tuples joined."""
    stat = column.split("_", 1)[1] if column.startswith(("device_", "backward_")) else column
    if column in ("backward_ratio", "alone_ratio"):
        return MISSING if value is None or np.isnan(value) else f"{value:.2f}x"
    if column.startswith("alone_") and column.endswith("_ns"):
        return format_ns(value)
    if STAT_UNITS.get(stat) == "ns":
        return format_ns(value)
    if STAT_UNITS.get(stat) == "%" or stat == "cum_pct":
        return format_pct(value)
    if column in ("flops", "flop_per_s"):
        return format_si(value)
    if column.endswith("_bytes"):
        return format_si(value) + "B"
    if column == "module_path" and value == "":
        return "(root)"
    if column == "module_stack" and isinstance(value, (tuple, list)):
        return " > ".join(value) or "(root)"
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
    if isinstance(value, (float, np.floating)):
        return f"{value:g}"
    return str(value)


def _truncate(column: str, text: str) -> str:
    width = MAX_SHAPES_WIDTH if column in ("input_shapes", "output_shapes") else MAX_CELL_WIDTH
    # a name or path keeps its tail; a label in prose keeps its head
    return elide(text, width, keep_tail=column in _KEEP_TAIL and " (" not in text)


def _title(column: str, group_by: str | None) -> str:
    if column == "group":
        return _GROUP_TITLES[str(group_by)]
    for prefix in ("device_", "backward_"):
        if column.startswith(prefix) and column[len(prefix):] in _TITLES:
            return prefix[:-1].capitalize() + " " + _TITLES[column[len(prefix):]].lower()
    return _TITLES.get(column, column)


def _notes(frame: pd.DataFrame, shown: int, label: str, name_column: str, top) -> list[str]:
    """A truncation note, one line naming the noisy rows among those shown (the noisiest
    first, at most NOISY_NAMES of them), and one on the shown rows without an Alone figure."""
    alone = _alone_blanks(frame, shown)
    notes = rows_left_out(len(frame), shown, label, top)
    visible = frame.iloc[:shown]
    noisy = noisy_mask(visible)
    if noisy.any():
        ratios = relative_iqr(visible)[noisy].sort_values(ascending=False, kind="stable")
        noisiest = ratios.iloc[:NOISY_NAMES]
        names = [f"{name} {format_pct(100.0 * r, 0)}"
                 for name, r in zip(visible.loc[noisiest.index, name_column], noisiest)]
        more = f", +{len(ratios) - NOISY_NAMES} more" if len(ratios) > NOISY_NAMES else ""
        notes.append(f"noisy (IQR/median > 10%): {len(ratios)} of {shown} {label} shown — "
                     f"{', '.join(names)}{more} — {_NOISE_HINT}")
    return notes + alone


def _alone_blanks(frame: pd.DataFrame, shown: int) -> list[str]:
    """One line on the shown rows whose Alone figure has no interval (too few blocks), and
    one on those without a figure and why (none without the column).

    >>> frame = pd.DataFrame({"name": ["a", "b", "c"], "alone_note": ["warm", "", ""],
    ...     "op": ["call_module", "outside_graph", "call_module"],
    ...     "alone_ns": [9.0, np.nan, np.nan], "alone_high_ns": [9.9, np.nan, np.nan]})
    >>> _alone_blanks(frame, 3)[0].split(" · ")[0]
    "Alone blank for 2 of 3 rows: 1 not a node's call, 1 not among the rows timed alone"
    """
    if "alone_ns" not in frame or not frame["alone_ns"].notna().any():
        return []
    rows = frame.iloc[:shown]
    wide = rows[rows["alone_ns"].notna() & ~np.isfinite(rows["alone_high_ns"].astype(float))]
    lines = [f"Alone unresolved for {', '.join(map(str, wide['name'].iloc[:NOISY_NAMES]))}"
             f"{' and more' if len(wide) > NOISY_NAMES else ''}: too few blocks for an "
             "interval (a busy machine, or a node slower alone than in its row) · "
             "prof.replay(node) with a larger budget"] if len(wide) else []
    blank = rows[rows["alone_ns"].isna()]
    if blank.empty:
        return lines
    notes = blank["alone_note"].fillna("").astype(str)
    kinds = {"not a node's call": blank["op"].isin(_NOT_A_CALL),
             "not replayable (compiled, hooks, opaque inputs)": notes.str.startswith(
                 "not replayable"),
             "over the alone step's budget": notes.str.contains("budget"),
             "failed alone": notes.str.startswith("not timed") & ~notes.str.contains("budget")}
    counts, taken = [], pd.Series(False, index=blank.index)
    for text, mask in kinds.items():
        mask = mask & ~taken
        taken |= mask
        if mask.any():
            counts.append(f"{int(mask.sum())} {text}")
    if (~taken).any():
        counts.append(f"{int((~taken).sum())} not among the rows timed alone")
    return lines + [f"Alone blank for {len(blank)} of {len(rows)} rows: {', '.join(counts)} · "
                    "profile(..., alone=[nodes]) or prof.replay(node) times a node alone · "
                    "to_dataframe()'s alone_note says why"]


def _with_alone(frame: pd.DataFrame, default: tuple) -> tuple[pd.DataFrame, tuple]:
    """`frame` with ``alone_ratio`` (the row's median over the node alone) and `default`
    with ALONE_COLUMNS after the median, where the profile timed nodes alone."""
    if "alone_ns" not in frame or not frame["alone_ns"].notna().any():
        return frame, default
    frame = frame.assign(alone_ratio=frame["median"] / frame["alone_ns"])
    at = default.index("median") + 1 if "median" in default else len(default)
    return frame, default[:at] + ALONE_COLUMNS + default[at:]


def check_depth(by_name: str, by: str | None, depth) -> None:
    """Check ``depth``: None, or the module depth (a positive int) of grouping by module;
    ``by_name`` names the caller's grouping parameter (``group_by``, ``by``).

    >>> check_depth("by", "module", 2)
    >>> check_depth("by", "node", 2)
    Traceback (most recent call last):
    ...
    pyfxprof.errors.ArgumentError: depth applies to by='module' only, got by='node'
    """
    if depth is None:
        return
    if by != "module":
        raise ArgumentError(f"depth applies to {by_name}='module' only, got {by_name}={by!r}")
    whole_number("depth", depth, minimum=1, none=True)


def _torch_sort_key(sort_by, frame: pd.DataFrame):
    """The column a torch.profiler sort key sorts by, or ``sort_by`` unchanged."""
    column = TORCH_SORT_KEYS.get(sort_by)
    if column is None:
        return sort_by
    if column not in SORT_KEYS and column not in frame.columns:
        needs = ("profile(..., profile_memory=True)" if column.endswith("_bytes")
                 else "device times (a profile of a CUDA model)")
        raise PyfxprofError(f"sort_by={sort_by!r} needs {needs}; this profile has none")
    return column


def _check_args(sort_by, top, columns, valid_columns) -> None:
    _choice("sort_by", sort_by, SORT_KEYS + tuple(TORCH_SORT_KEYS))
    if top is not None:  # (None: every row)
        whole_number("top", top, minimum=1, none=True)
    if columns is not None:
        if not isinstance(columns, (list, tuple)) or not columns:
            raise ArgumentError("columns must be a non-empty list of column names")
        unknown = [c for c in columns if c not in valid_columns]
        if unknown:
            raise ArgumentError(f"unknown columns {unknown}; valid: {list(valid_columns)}")


def _op_targets(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows whose "Op" (target) shows the module type for call_module nodes, whose target is
    their module path and would repeat the Module column ("layer1.0.conv1" -> "Conv2d")."""
    if not {"op", "target", "module_type"} <= set(frame.columns):
        return frame
    frame = frame.copy()
    module_call = frame["op"] == "call_module"
    frame["target"] = frame["target"].where(~module_call, frame["module_type"])
    return frame


def _sort_text(column: str) -> str:
    """What the header's "rows:" line says of the order by ``column``.

    >>> _sort_text("median"), _sort_text("device_total")
    ('median per run, descending', 'device_total, descending')
    """
    return _SORT_TEXT.get(column, f"{column}, descending")


def _node_default_columns(profile) -> tuple:
    if profile.backward_samples is not None:
        return BACKWARD_DEFAULT_COLUMNS
    return NODE_DEFAULT_COLUMNS if profile.device_samples is None else DEVICE_DEFAULT_COLUMNS


def _with_memory(default: tuple) -> tuple:
    """`default` columns with MEMORY_DEFAULT_COLUMNS before `pct_total` (kept where measured)."""
    at = default.index("pct_total")
    return default[:at] + MEMORY_DEFAULT_COLUMNS + default[at:]


def build_view(profile, sort_by: str | None = None, top: int | None = None,
               columns=None, group_by: str | None = None, depth: int | None = None) -> View:
    """Sort (None: DEFAULT_SORT), cut and format a Profile (node view, or group view with
    ``group_by``; ``depth`` is the module depth of ``group_by="module"``, 1 by default)."""
    sort_by = DEFAULT_SORT if sort_by is None else sort_by
    if group_by is not None:
        _choice("group_by", group_by, GROUP_KEYS)
        check_depth("group_by", group_by, depth)
        frame = _group_frame(profile, group_by, depth or 1)
        name_column, label = "group", "groups"
        valid = GROUP_COLUMNS + tuple(c for c in frame.columns if c not in GROUP_COLUMNS)
        default: tuple[str, ...] = (("group", "input_shapes") + GROUP_DEFAULT_COLUMNS[1:]
                                    if group_by == "input_shape" else GROUP_DEFAULT_COLUMNS)
        if profile.backward_samples is not None:
            default = default[:-4] + ("backward_median", "backward_ratio") + default[-4:]
    else:
        check_depth("group_by", group_by, depth)
        frame, name_column, label = with_flop_rate(profile.to_dataframe()), "name", "nodes"
        default = _node_default_columns(profile)
        if "calls" in frame and frame["calls"].max() > 1:  # a graph run several times a call
            default = default[:default.index("median")] + ("calls",) + default[
                default.index("median"):]
        frame, default = _with_alone(frame, default)
        valid = tuple(frame.columns) + ("cum_pct",)
    _check_args(sort_by, top, columns, valid)
    sort_by = _torch_sort_key(sort_by, frame)
    frame = sorted_rows(frame, sort_by, name_column).reset_index(drop=True)
    frame["cum_pct"] = cumulative_pct(frame["pct_total"])
    shown = len(frame) if top is None else min(top, len(frame))
    columns = list(columns or [c for c in _with_memory(default) if c in valid])  # optional ones
    cut = _op_targets(frame.iloc[:shown])
    formatted = [[_truncate(c, _cell(c, v)) for v in cut[c].tolist()] for c in columns]
    rows = [list(row) for row in zip(*formatted)]
    if group_by is None:  # the functions that spend the outside row, under it
        rows = with_function_rows(profile, columns, rows, cut[name_column].tolist(), _truncate)
    right = [pd.api.types.is_numeric_dtype(frame[c]) for c in columns]
    return View(
        header=profile_header(profile) + [f"rows: by {_sort_text(sort_by)}"],
        titles=[_title(c, group_by) for c in columns], right_aligned=right, rows=rows,
        notes=_notes(frame, shown, label, name_column, top),
        drop_order=[columns.index(c) for c in DROP_ORDER if c in columns],
    )


def profile_table(profile, sort_by: str | None = None, top: int | None = None,
                  columns: list[str] | None = None, group_by: str | None = None,
                  depth: int | None = None, width: int | str | None = "auto",
                  row_limit: int | None = None) -> str:
    """``Profile.table``: the report as aligned text: header block, table, truncation and
    noise notes.

    sort_by: "total" | "median" | "mean" | "max" (descending), "name" (ascending) or
    "order" (execution / first appearance); None: DEFAULT_SORT ("median", which one
    preempted run cannot move; the header's "rows:" line says the order). top: keep the
    first ``top`` rows. columns: to_dataframe() column names plus "cum_pct" and, with a ``flops`` column,
    "flop_per_s" (group view: "group", "nodes", statistics, "cum_pct", "flops",
    "flop_per_s"). group_by: None | "op" | "target" | "module_type" | "module" (inclusive
    time per module cut at ``depth``, default 1; see rollup) | "input_shape" (per op and
    input shapes, like torch.profiler's group_by_input_shape) | "source" (per model-code
    line that created the nodes, see capture.source). width: fit into this many
    characters (text columns cut, then columns dropped with a note); "auto": the
    terminal's width when stdout is one, else no limit; None: no limit.
    torch.profiler's names work too: ``row_limit`` for ``top`` (-1: all rows) and its sort
    keys (``cpu_time_total``, ``self_cpu_time_total``, ``cpu_time``, ``count``, memory and
    CUDA keys: TORCH_SORT_KEYS; see docs/torch_profiler.md).

    >>> import numpy as np, pandas as pd
    >>> from pyfxprof.data.profile import Profile
    >>> nodes = pd.DataFrame({"index": [0], "name": ["x"], "op": ["call_function"],
    ...     "target": ["add"], "module_path": [""], "module_type": ["M"],
    ...     "module_stack": [()]})
    >>> text = Profile(nodes, np.array([[5]]), np.array([5])).table(columns=["name", "median"])
    >>> text.splitlines()[-3:]
    ['Node  Median', '----  ------', 'x       5 ns']
    """
    if width not in (None, "auto") and (isinstance(width, bool) or not isinstance(width, int)
                                        or width < 1):
        raise ArgumentError(f"width must be a positive int, \"auto\" or None, got {width!r}")
    if row_limit is not None:
        if top is not None:
            raise PyfxprofError("give top or row_limit (torch.profiler's name for it), not both")
        top = rows_of_limit(row_limit)
    view = build_view(profile, sort_by=sort_by, top=top, columns=columns, group_by=group_by,
                      depth=depth)
    return render_text(view, width=terminal_width() if isinstance(width, str) else width)


def rows_of_limit(row_limit: int | None) -> int | None:
    """torch.profiler's ``row_limit`` as a row count: None (all rows) for None or a
    negative limit; an ArgumentError for anything but an int.

    >>> rows_of_limit(-1), rows_of_limit(5)
    (None, 5)
    """
    if row_limit is not None and (isinstance(row_limit, bool) or not isinstance(row_limit, int)):
        raise ArgumentError(f"row_limit must be an int (-1: all rows), got {row_limit!r}")
    return None if row_limit is None or row_limit < 0 else row_limit


def profile_tree(profile, max_depth: int | None = None) -> str:
    """``Profile.tree``: the module hierarchy with each module's median inclusive time and
    percent (views/module_tree.py), its names safe on a terminal.

    >>> print(prof.tree(max_depth=1))  # doctest: +SKIP
    ResNet         1.21 ms  100.0%
    ├─ conv1       95.1 µs    7.9%
    └─ layer1       402 µs   33.2%
    """
    return terminal_text(module_tree(profile, max_depth))


def profile_html(profile) -> str:
    """``Profile._repr_html_``: the first HTML_TOP rows of the report as HTML (notebooks)."""
    return render_html(build_view(profile, top=HTML_TOP))
