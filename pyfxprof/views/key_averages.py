"""torch.profiler's vocabulary on a Profile: key_averages() rows per op kind and their table()
with torch's column titles, sort keys and units (times in µs on the rows, as torch's).

See docs/torch_profiler.md for the mapping of torch.profiler calls to pyfxprof calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..data import rollup
from ..errors import ArgumentError, PyfxprofError
from ..data.op_names import aten_of_operator
from ..data.rungs import INDUCTOR

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
#: Memory columns of the nodes frame (from the analysis run with profile_memory=True).
CPU_MEMORY, DEVICE_MEMORY = "cpu_alloc_bytes", "cuda_alloc_bytes"


@dataclass
class KeyAverage:
    """One row of key_averages(): an op kind (and input shapes / source frames when grouped).
    Times in µs summed over every call (torch's units), memory in bytes over one run."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    device_time_total: float = 0.0
    self_device_time_total: float = 0.0
    cpu_memory_usage: int = 0
    self_cpu_memory_usage: int = 0
    device_memory_usage: int = 0
    self_device_memory_usage: int = 0
    input_shapes: str = ""
    stack: list[str] = field(default_factory=list)
    node: str = ""  # events() only: the node, the run and the loop step of this one call
    run: int = -1
    step: int = -1

    @property
    def cpu_time(self) -> float:
        """Average CPU µs per call."""
        return self.cpu_time_total / max(self.count, 1)

    @property
    def device_time(self) -> float:
        """Average device µs per call."""
        return self.device_time_total / max(self.count, 1)

    cuda_time = device_time
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_memory_usage = property(lambda self: self.device_memory_usage)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)


class KeyAverages(list):
    """The rows of key_averages(), a list of KeyAverage, with torch's table()."""

    def __init__(self, rows, has_device: bool, has_memory: bool, has_device_memory: bool,
                 grouped_shapes: bool, stack_n: int) -> None:
        super().__init__(rows)
        self.has_device, self.has_memory = has_device, has_memory
        self.has_device_memory = has_device_memory
        self.grouped_shapes, self.stack_n = grouped_shapes, stack_n

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        """torch's EventList.table(): rows sorted by a torch sort key (None: first appearance),
        at most ``row_limit`` rows (-1: all), torch's column titles, ``header`` above them and
        names, shapes and frames cut at the given widths. ``top_level_events_only`` is
        accepted so that torch's calls run; every row is shown.

        Example:
            >>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5))  # doctest: +SKIP
        """
        if row_limit is not None and (isinstance(row_limit, bool)
                                      or not isinstance(row_limit, int)):
            raise ArgumentError(f"row_limit must be an int (-1: all rows), got {row_limit!r}")
        rows = list(self)
        if sort_by is not None:
            if sort_by not in SORT_KEYS:
                raise PyfxprofError(f"sort_by={sort_by!r} is not a torch.profiler sort key; "
                                    f"use one of {sorted(SORT_KEYS)}")
            rows.sort(key=lambda row: getattr(row, SORT_KEYS[sort_by]), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        return _render(self, rows, header, max_name_column_width, max_shapes_column_width,
                       max_src_column_width)


#: Why a profile has no input shapes, by capture mode.
_NO_SHAPES = {
    INDUCTOR: "group_by_input_shape needs input shapes: a compiled profile's rows are "
                "Inductor kernels, which record none; profile the eager model for them",
    None: "group_by_input_shape needs input shapes: this profile has none (a loaded trace or "
          "an older profile); profile the model with pyfxprof.profile for them"}


def key_averages(profile, group_by_input_shape: bool = False,
                 group_by_stack_n: int = 0) -> KeyAverages:
    """Rows per op kind (module type for module calls, the aten op for a Python operator on a
    tensor, target otherwise: op_kinds), as torch.profiler's key_averages(); "self" excludes
    module calls nested inside (module-hooks captures).

    Example:
        >>> rows = prof.key_averages()  # doctest: +SKIP
        >>> rows[0].key, rows[0].count, rows[0].self_cpu_time_total  # doctest: +SKIP
        ('Conv2d', 1000, 51234.5)
    """
    if isinstance(group_by_stack_n, bool) or not isinstance(group_by_stack_n, int):
        raise ArgumentError(f"group_by_stack_n must be an int (0: no stacks), got "
                            f"{group_by_stack_n!r}")
    nodes = profile.nodes
    if group_by_input_shape and "input_shapes" not in nodes:
        raise PyfxprofError(_NO_SHAPES.get(profile.meta.get("capture_mode"), _NO_SHAPES[None]))
    parents = rollup.parent_nodes(nodes)
    per_node = _per_node(profile, parents)
    stacks = [list(_stack(nodes, k, group_by_stack_n)) for k in range(len(nodes))]
    rows: dict[tuple, KeyAverage] = {}
    for k, kind in enumerate(op_kinds(nodes)):
        shapes = str(nodes["input_shapes"][k]) if group_by_input_shape else ""
        key = (kind, shapes, tuple(stacks[k]))
        row = rows.setdefault(key, KeyAverage(kind, input_shapes=shapes, stack=stacks[k]))
        row.count += profile.n_runs
        for name, values in per_node.items():
            setattr(row, name, getattr(row, name) + values[k])
    return KeyAverages(rows.values(), profile.device_samples is not None,
                       CPU_MEMORY in nodes, DEVICE_MEMORY in nodes, group_by_input_shape,
                       group_by_stack_n)


def events(profile) -> KeyAverages:
    """torch.profiler's events(): one row per node call (node x run), its ``key`` the op kind,
    ``node``, ``run`` and loop ``step`` named, times in µs, memory the node's (measured once,
    in the analysis run).

    Example:
        >>> [(e.key, e.node, e.step) for e in prof.events()][:1]  # doctest: +SKIP
        [('Conv2d', 'conv1', 0)]
    """
    nodes, parents = profile.nodes, rollup.parent_nodes(profile.nodes)
    per_call = {}
    for name, samples in _time_samples(profile).items():
        per_call[f"{name}_time_total"] = samples / 1e3
        per_call[f"self_{name}_time_total"] = rollup.self_values(samples, parents) / 1e3
    memory = _memory(profile, parents)
    kinds, names, steps = op_kinds(nodes), nodes["name"].tolist(), profile.run_steps()
    rows = []
    for run in range(profile.n_runs):
        for k, kind in enumerate(kinds):
            row = KeyAverage(kind, count=1, node=str(names[k]), run=run, step=int(steps[run]))
            for attribute, values in per_call.items():
                setattr(row, attribute, float(values[run, k]))
            for attribute, figures in memory.items():
                setattr(row, attribute, figures[k])
            rows.append(row)
    return KeyAverages(rows, profile.device_samples is not None, CPU_MEMORY in nodes,
                       DEVICE_MEMORY in nodes, False, 0)


def op_kinds(nodes) -> list[str]:
    """The row name of each node: its op kind (data.rollup.op_kind_keys), a Python operator on
    a tensor named by the aten op torch.profiler shows for it (``out += x``: aten::add_).

    Example:
        >>> import pandas as pd
        >>> op_kinds(pd.DataFrame({"op": ["call_module", "call_function", "call_function"],
        ...     "target": ["fc", "_operator.iadd", "_operator.add"],
        ...     "module_type": ["Linear", "Net", "Net"],
        ...     "input_shapes": ["([2, 4] float32)", "([2, 4] float32, [2, 4] float32)",
        ...                      "(int, int)"]}))
        ['Linear', 'aten::add_', '_operator.add']
    """
    kinds = rollup.op_kind_keys(nodes)
    if "input_shapes" not in nodes:
        return kinds
    return [aten_of_operator(kind, str(shapes)) or kind if op == "call_function" else kind
            for kind, op, shapes in zip(kinds, nodes["op"], nodes["input_shapes"])]


def _time_samples(profile) -> dict[str, np.ndarray]:
    """Host ("cpu") and, when measured, device ns per run and node."""
    if profile.device_samples is None:
        return {"cpu": profile.samples}
    return {"cpu": profile.samples, "device": profile.device_samples}


def _per_node(profile, parents: np.ndarray) -> dict[str, list]:
    """Row attributes per node: µs over all runs (total and self), memory bytes net of frees."""
    per_node = {}
    for name, samples in _time_samples(profile).items():
        total = samples.sum(axis=0)
        per_node[f"{name}_time_total"] = (total / 1e3).tolist()
        per_node[f"self_{name}_time_total"] = (rollup.self_values(total, parents) / 1e3).tolist()
    return {**per_node, **_memory(profile, parents)}


def _memory(profile, parents: np.ndarray) -> dict[str, list]:
    """Memory attributes per node (bytes allocated minus freed, and self), when measured."""
    per_node = {}
    for name, prefix in (("cpu", "cpu"), ("device", "cuda")):
        if f"{prefix}_alloc_bytes" in profile.nodes:
            net = (profile.nodes[f"{prefix}_alloc_bytes"].to_numpy(np.int64)
                   - profile.nodes[f"{prefix}_freed_bytes"].to_numpy(np.int64))
            per_node[f"{name}_memory_usage"] = net.tolist()
            per_node[f"self_{name}_memory_usage"] = rollup.self_values(net, parents).tolist()
    return per_node


def _stack(nodes, k: int, n: int) -> tuple[str, ...]:
    """The innermost ``n`` source frames of node k, innermost first (torch's order)."""
    if n <= 0 or "source_stack" not in nodes:
        return ()
    frames = nodes["source_stack"][k]
    return tuple(reversed(tuple(frames or ())))[:n]


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
