"""torch.profiler's table on key_averages() and events() rows (data/key_averages.py): torch's
column titles, sort keys and units.

See docs/torch_profiler.md for the mapping of torch.profiler calls to pyfxprof calls.
"""

from __future__ import annotations

from typing import Any, Callable

from ..data.key_averages import KeyAverages
from ..errors import PyfxprofError
from .report import rows_of_limit

#: torch's sort keys -> the row attribute they sort by (descending); cuda_/xpu_ read device_.
SORT_KEYS = {
    "cpu_time": "cpu_time", "cpu_time_total": "cpu_time_total",
    "self_cpu_time_total": "self_cpu_time_total", "count": "count",
    "cpu_memory_usage": "cpu_memory_usage", "self_cpu_memory_usage": "self_cpu_memory_usage",
    **{f"{d}_time": "device_time" for d in ("cuda", "xpu", "device")},
    **{f"{d}_time_total": "device_time_total" for d in ("cuda", "xpu", "device")},
    **{f"self_{d}_time_total": "self_device_time_total" for d in ("cuda", "xpu", "device")},
    **{f"{d}_memory_usage": "device_memory_usage" for d in ("cuda", "xpu", "device")},
    **{f"self_{d}_memory_usage": "self_device_memory_usage" for d in ("cuda", "xpu", "device")},
}


def key_averages_table(averages: KeyAverages, sort_by: str | None = None,
                       row_limit: int = 100, max_src_column_width: int = 75,
                       max_name_column_width: int = 55, max_shapes_column_width: int = 80,
                       header: str | None = None, top_level_events_only: bool = False) -> str:
    """torch's EventList.table(): rows sorted by a torch sort key (None: first appearance),
    at most ``row_limit`` rows (-1: all), torch's column titles, ``header`` above them and
    names, shapes and frames cut at the given widths. ``top_level_events_only`` is
    accepted so that torch's calls run; every row is shown.

    Example:
        >>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5))  # doctest: +SKIP
    """
    limit = rows_of_limit(row_limit)
    rows = list(averages)
    if sort_by is not None:
        if sort_by not in SORT_KEYS:
            raise PyfxprofError(f"sort_by={sort_by!r} is not a torch.profiler sort key; "
                                f"use one of {sorted(SORT_KEYS)}")
        rows.sort(key=lambda row: getattr(row, SORT_KEYS[sort_by]), reverse=True)
    if limit:  # torch shows every row for 0 too
        rows = rows[:limit]
    return _render(averages, rows, header, max_name_column_width, max_shapes_column_width,
                   max_src_column_width)


def format_time_us(us: float) -> str:
    """A µs figure as torch's tables print it.

    Example:
        >>> format_time_us(17.0), format_time_us(6146.0), format_time_us(2.5e6)
        ('17.000us', '6.146ms', '2.500s')
    """
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_bytes(value: int) -> str:
    """Bytes as torch's tables print them (binary units, B/KB/MB/GB).

    Example:
        >>> format_bytes(0), format_bytes(2048), format_bytes(-3 * 2**20)
        ('0 B', '2.00 KB', '-3.00 MB')
    """
    for scale, unit in ((2**30, "GB"), (2**20, "MB"), (2**10, "KB")):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{int(value)} B"


def _columns(averages: KeyAverages) -> list[tuple[str, Callable[[Any], str]]]:
    """(title, cell function of a row) in torch's column order."""
    self_cpu = sum(row.self_cpu_time_total for row in averages) or 1.0
    self_dev = sum(row.self_device_time_total for row in averages) or 1.0
    columns: list[tuple[str, Callable[[Any], str]]] = [
        ("Self CPU %", lambda r: f"{100 * r.self_cpu_time_total / self_cpu:.2f}%"),
        ("Self CPU", lambda r: format_time_us(r.self_cpu_time_total)),
        ("CPU total %", lambda r: f"{100 * r.cpu_time_total / self_cpu:.2f}%"),
        ("CPU total", lambda r: format_time_us(r.cpu_time_total)),
        ("CPU time avg", lambda r: format_time_us(r.cpu_time))]
    if averages.has_device:
        columns += [
            ("Self CUDA", lambda r: format_time_us(r.self_device_time_total)),
            ("Self CUDA %", lambda r: f"{100 * r.self_device_time_total / self_dev:.2f}%"),
            ("CUDA total", lambda r: format_time_us(r.device_time_total)),
            ("CUDA time avg", lambda r: format_time_us(r.device_time))]
    if averages.has_memory:
        columns += [("CPU Mem", lambda r: format_bytes(r.cpu_memory_usage)),
                    ("Self CPU Mem", lambda r: format_bytes(r.self_cpu_memory_usage))]
    if averages.has_device_memory:
        columns += [("CUDA Mem", lambda r: format_bytes(r.device_memory_usage)),
                    ("Self CUDA Mem", lambda r: format_bytes(r.self_device_memory_usage))]
    return columns + [("# of Calls", lambda r: str(r.count))]


def _render(averages: KeyAverages, rows: list, header: str | None, name_width: int,
            shapes_width: int, src_width: int) -> str:
    """torch's table layout: dashed rules, right-aligned figures, totals below."""
    columns = _columns(averages)
    names = [_clip(row.key, name_width) for row in rows]
    cells = [[cell(row) for _, cell in columns] for row in rows]
    name_w = max([len("Name"), *map(len, names)])
    widths = [max(len(title), 12, *(len(c[i]) for c in cells)) for i, (title, _) in
              enumerate(columns)]
    extra = []
    if averages.grouped_shapes:
        extra.append(("Input Shapes", [[_clip(row.input_shapes, shapes_width)] for row in rows]))
    if averages.stack_n > 0:
        extra.append(("Source Location", [[_clip(f, src_width) for f in row.stack] or [""]
                                          for row in rows]))
    extra_w = [max(len(title), *(len(line) for lines in values for line in lines))
               for title, values in extra]
    rule = "  ".join(["-" * name_w] + ["-" * w for w in widths + extra_w])
    titles = ["Name".ljust(name_w)] + [t.rjust(w) for (t, _), w in zip(columns, widths)]
    titles += [t.ljust(w) for (t, _), w in zip(extra, extra_w)]
    lines = ([header] if header else []) + [rule, "  ".join(titles).rstrip(), rule]
    for k, (name, row_cells) in enumerate(zip(names, cells)):
        extra_lines = [values[k] for _, values in extra]
        for depth in range(max([1, *(len(v) for v in extra_lines)])):
            left = ([name.ljust(name_w)] + [c.rjust(w) for c, w in zip(row_cells, widths)]
                    if depth == 0 else [" " * name_w] + [" " * w for w in widths])
            left += [(v[depth] if depth < len(v) else "").ljust(w)
                     for v, w in zip(extra_lines, extra_w)]
            lines.append("  ".join(left).rstrip())
    lines += [rule, f"Self CPU time total: {format_time_us(_total(averages, 'cpu'))}"]
    if averages.has_device:
        lines.append(f"Self CUDA time total: {format_time_us(_total(averages, 'device'))}")
    return "\n".join(lines) + "\n"


def _total(averages: KeyAverages, name: str) -> float:
    return float(sum(getattr(row, f"self_{name}_time_total") for row in averages))


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
