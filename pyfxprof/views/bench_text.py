"""Measurements (pyfxprof.bench) and BenchGrid grids (pyfxprof.bench_grid) as text and HTML:
``str(m)``, ``repr(m)``, ``m._repr_html_()``, ``str(grid)``, ``grid._repr_html_()``, served to
the plain-data classes through the package root's ``_METHODS``."""

from __future__ import annotations

import html
import math

from ..data.bench_compare import NO_PARAMS, BenchGrid
from ..data.measurement import Measurement
from ..data.units import format_flops, format_ns, format_pct, format_si, plural
from ..stats.confidence import CONFIDENCE

#: The intervals' label, "95% interval".
INTERVAL = f"{CONFIDENCE:.0%} interval"

#: The mark of a grid cell whose median differs significantly from its left neighbour's.
MARK = "*"
MARK_NOTE = (f"{MARK}: differs from the cell to its left (their medians' {INTERVAL}s do not "
             "overlap)")


def _precision_text(m: Measurement) -> str:
    """±x% of the median, or "unbounded" with too few blocks."""
    return "unbounded" if math.isinf(m.precision) else f"±{format_pct(100 * m.precision, 2)}"


def _stop_text(m: Measurement) -> str:
    target = f"±{format_pct(100 * m.target, 2)}"
    if m.stopped == "target":
        return f"stopped at the target {target}"
    return f"budget of {m.budget_s:g} s spent before the target {target}"


def _summary_lines(m: Measurement) -> list[str]:
    low, high = m.interval
    bounds = "unbounded" if math.isinf(low) else f"{format_ns(low)} – {format_ns(high)}"
    lines = [f"{m.label}: median {format_ns(m.median)} per call ({INTERVAL} {bounds}, "
             f"{_precision_text(m)}), IQR {format_ns(m.iqr)}, mean {format_ns(m.mean)}",
             f"  the calls alone: median {format_ns(m.call_median)}, IQR "
             f"{format_ns(m.call_iqr)} (without releasing results)",
             f"  {m.calls:,} calls in {plural(m.blocks, 'block')} of {m.block_size} "
             f"({plural(m.warmup_blocks, 'warm-up block')} left out); {_stop_text(m)}"]
    rate = [f"{format_si(m.calls_per_second)} calls/s"]
    if m.flops_per_second is not None:
        rate.append(format_flops(m.flops_per_second, "FLOP/s"))
    rate += [plural(m.threads, "thread"), m.device,
             f"native timer, {m.overhead_ns:.0f} ns timer cost subtracted per call"]
    lines.append("  " + " · ".join(rate))
    if m.device_median is not None:
        lines.append(f"  device (CUDA events): median {format_ns(m.device_median)} per call")
    return lines


def _baseline_rows(m: Measurement) -> list[tuple[str, str, str]]:
    """(timer, median per call, difference from the native median) per timer."""
    rows = [("pyfxprof native", format_ns(m.median), "")]
    for name, value in m.baseline_medians().items():
        change = value - m.median
        relative = format_pct(100 * change / m.median) if m.median > 0 else "-"
        sign = "+" if change >= 0 else ""
        rows.append((name, format_ns(value), f"{sign}{format_ns(change)} ({sign}{relative})"))
    return rows


def render_measurement(m: Measurement) -> str:
    """``str(Measurement)``: the median with its interval, spread, calls, blocks, why it
    stopped, rates; the baseline timers side by side when measured; the per-node profile's
    size when there is one.

    >>> import numpy as np
    >>> m = Measurement("f", np.full((10, 4), 1400), np.full(10, 6000))
    >>> for line in render_measurement(m).splitlines()[:2]:
    ...     print(line)
    f: median 1.50 µs per call (95% interval 1.50 µs – 1.50 µs, ±0.00%), IQR 0 ns, mean 1.50 µs
      the calls alone: median 1.40 µs, IQR 0 ns (without releasing results)
    """
    lines = _summary_lines(m)
    if m.baseline:
        rows = _baseline_rows(m)
        width = max(len(r[0]) for r in rows)
        lines.append(f"  {'timer':<{width}}  {'median':>9}  vs native (Python timers "
                     "uncorrected)")
        lines += [f"  {a:<{width}}  {b:>9}  {c}".rstrip() for a, b, c in rows]
    if m.profile is not None:
        lines.append(f"  per-node profile: {plural(m.profile.n_nodes, 'node')} "
                     "(m.profile.table())")
    return "\n".join(lines)


def measurement_repr(m: Measurement) -> str:
    """``repr(Measurement)``: one line.

    >>> import numpy as np
    >>> measurement_repr(Measurement("f", np.full((10, 4), 1400), np.full(10, 6000)))
    '<Measurement f: median 1.50 µs ±0.00% over 40 calls>'
    """
    return (f"<Measurement {m.label}: median {format_ns(m.median)} {_precision_text(m)} "
            f"over {m.calls:,} calls>")


def measurement_html(m: Measurement) -> str:
    """``Measurement._repr_html_``: the text lines in a table."""
    rows = [("median", f"{format_ns(m.median)} per call"),
            (INTERVAL, " – ".join(format_ns(v) for v in m.interval)
             + f" ({_precision_text(m)})"),
            ("IQR", format_ns(m.iqr)),
            ("the calls alone", f"median {format_ns(m.call_median)}, IQR {format_ns(m.call_iqr)}"),
            ("calls", f"{m.calls:,} in {m.blocks} blocks"),
            ("calls/s", format_si(m.calls_per_second)),
            ("FLOP/s", format_flops(m.flops_per_second, "FLOP/s")),
            ("threads", str(m.threads)), ("device", m.device), ("stopped", _stop_text(m))]
    rows += [(name, f"{value} {change}") for name, value, change in _baseline_rows(m)[1:]]
    body = "".join(f"<tr><th>{html.escape(a)}</th><td>{html.escape(b)}</td></tr>"
                   for a, b in rows)
    return (f'<div class="pyfxprof bench"><b>{html.escape(m.label)}</b>'
            f"<table>{body}</table></div>")


def _grid_cells(grid: BenchGrid) -> tuple[list[str], list[list[str]]]:
    """(titles, rows) of the grid's text: row key parts, then a cell per column."""
    titles = grid.row_names + [(f"{grid.column_name}={c}" if grid.column_name != NO_PARAMS
                                else c) + "  " for c in grid.column_keys]
    rows = []
    for row in grid.row_keys:
        cells = []
        for column in grid.column_keys:
            m = grid.cell(row, column)
            cells.append("-" if m is None else
                         format_ns(m.median) + (f" {MARK}" if grid.marked(m) else "  "))
        rows.append(list(row) + cells)
    return titles, rows


def render_bench_grid(grid: BenchGrid) -> str:
    """``str(BenchGrid)``: medians per call, rows and columns by parameter, marks, a note.

    >>> import numpy as np
    >>> ms = [Measurement("add", np.full((8, 2), t), np.full(8, 2 * t), params={"n": n})
    ...       for n, t in [(1, 100), (2, 900)]]
    >>> print(render_bench_grid(BenchGrid(ms)))
    median per call (pyfxprof.bench)
    label     n=1       n=2
    add    100 ns    900 ns *
    *: differs from the cell to its left (their medians' 95% intervals do not overlap)
    """
    titles, rows = _grid_cells(grid)
    widths = [max(len(t), *(len(r[i]) for r in rows)) for i, t in enumerate(titles)]
    keys = len(titles) - len(grid.column_keys)
    lines = ["  ".join(c.ljust(w) if i < keys else c.rjust(w)
                       for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
             for cells in [titles] + rows]
    return "\n".join(["median per call (pyfxprof.bench)"] + lines + [MARK_NOTE]
                     + _short_of_target(grid))


def _short_of_target(grid: BenchGrid) -> list[str]:
    """A line naming the cells whose budget ran out before their target, if any."""
    short = [f"{' '.join(grid.row_key(m))} {grid.column_key(m)} ({_precision_text(m)})".strip()
             for m in grid.measurements if m.stopped != "target"]
    return [f"budget spent before the target in: {', '.join(short)}"] if short else []


def bench_grid_html(grid: BenchGrid) -> str:
    """``BenchGrid._repr_html_``: the grid as an HTML table."""
    titles, rows = _grid_cells(grid)
    head = "".join(f"<th>{html.escape(t.strip())}</th>" for t in titles)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return (f'<div class="pyfxprof bench-grid"><table><tr>{head}</tr>{body}</table>'
            f"<p>{html.escape(MARK_NOTE)}</p></div>")
