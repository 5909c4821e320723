"""Module hierarchy roll-up: group keys per module at a depth or per (op, input shapes), and the
module tree with inclusive times.

Depth counts the components of a node's ``module_path``: at depth 1 ``layer1.0.conv1`` rolls up
into ``layer1``, at depth 2 into ``layer1.0`` (the same cut as ``Diff.changes(by="module")``).
A node whose module is shallower than the depth stays in its own module; when that module
also has deeper nodes, its row is labelled ``<path> (self)`` so that every row is either a
module's inclusive time or a module's own nodes, and rows add up to the total.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .outside_graph import tree_rows
from ..stats.node_statistics import group_samples
from .units import format_ns, format_pct

from ..errors import ArgumentError

ROOT_LABEL = "(root)"
#: Separates the op from the input shapes in group_by="input_shape" keys.
SHAPE_SEPARATOR = "\x1f"


def cut(path: str, depth: int) -> str:
    """`path` cut to its first `depth` components.

    Example:
        >>> cut("layer1.0.conv1", 2), cut("fc", 2), cut("", 1)
        ('layer1.0', 'fc', '')
    """
    return ".".join(path.split(".")[:depth]) if path else ""


def _depth(path: str) -> int:
    return path.count(".") + 1 if path else 0


def module_keys(nodes: pd.DataFrame, depth: int) -> list[str]:
    """One roll-up label per node at `depth` (see the module docstring).

    Example:
        >>> nodes = pd.DataFrame({"module_path": ["a.b", "a", "", "c"]})
        >>> module_keys(nodes, 2)
        ['a.b', 'a (self)', '(root)', 'c']
    """
    paths = [str(p) for p in nodes["module_path"]]
    keys = [cut(p, depth) for p in paths]
    deeper = {cut(p, d) for p in set(paths) for d in range(1, min(_depth(p), depth))}
    return [ROOT_LABEL if not key else f"{key} (self)" if key in deeper else key
            for key in keys]


def op_kind_keys(nodes: pd.DataFrame) -> list[str]:
    """One op kind per node: the module type for module calls (every Conv2d call is one kind,
    as every aten::convolution is one row of torch.profiler's key_averages) and the target
    otherwise.

    Example:
        >>> op_kind_keys(pd.DataFrame({"op": ["call_module", "call_function"],
        ...     "target": ["layer1.conv", "torch.relu"], "module_type": ["Conv2d", "Net"]}))
        ['Conv2d', 'torch.relu']
    """
    return nodes["module_type"].where(nodes["op"] == "call_module",
                                      nodes["target"]).astype(str).tolist()


def parent_nodes(nodes: pd.DataFrame) -> np.ndarray:
    """Per node, the row of the module call it ran inside (-1 for none). Nodes nest only when
    module calls are timed whole around their submodules' calls (the module-hooks capture);
    an FX graph's nodes are leaves, so all are -1 there.

    Example:
        >>> parent_nodes(pd.DataFrame({"op": ["call_module"] * 4,
        ...     "module_path": ["", "layer1", "layer1.relu", "fc"]})).tolist()
        [-1, 0, 1, 0]
    """
    parents = np.full(len(nodes), -1, dtype=np.int64)
    open_calls: list[tuple[int, str]] = []
    for j, (op, path) in enumerate(zip(nodes["op"], nodes["module_path"].astype(str))):
        while open_calls and not (open_calls[-1][1] == "" or path.startswith(open_calls[-1][1] + ".")):
            open_calls.pop()
        parents[j] = open_calls[-1][0] if open_calls else -1
        if op == "call_module":
            open_calls.append((j, path))
    return parents


def self_values(values: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """``values`` (nodes along the last axis) minus their direct children's: what a node did
    itself, outside the module calls nested in it.

    Example:
        >>> self_values(np.array([10, 4, 1, 3]), np.array([-1, 0, 1, 0])).tolist()
        [3, 3, 1, 3]
    """
    result = np.array(values, copy=True)
    for child, parent in enumerate(parents):
        if parent >= 0:
            result[..., parent] -= values[..., child]
    return result


def group_memory(nodes: pd.DataFrame, keys: list, names: list, device: str = "cpu"
                 ) -> dict[str, np.ndarray]:
    """Per group (``names``, in that order) of the nodes sharing ``keys``: bytes allocated and
    freed inside its nodes (summed) and the peak live bytes reached inside them above the live
    bytes at its first node's start (a module's peak including its children, for the
    contiguous groups of group_by="module"); from the ``{device}_*_bytes`` columns.

    Example:
        >>> nodes = pd.DataFrame({"cpu_alloc_bytes": [100, 50, 10], "cpu_freed_bytes": [0, 100, 0],
        ...     "cpu_peak_bytes": [100, 50, 10], "cpu_live_bytes": [100, 50, 60]})
        >>> {k: v.tolist() for k, v in group_memory(nodes, ["a", "a", "b"], ["a", "b"]).items()}
        {'cpu_alloc_bytes': [150, 10], 'cpu_freed_bytes': [100, 0], 'cpu_peak_bytes': [150, 10]}
    """
    column = lambda figure: nodes[f"{device}_{figure}_bytes"].to_numpy(np.int64)  # noqa: E731
    alloc, freed, peak, live = column("alloc"), column("freed"), column("peak"), column("live")
    start = live - alloc + freed
    frame = pd.DataFrame({"key": pd.Series(keys, dtype=object), "alloc": alloc, "freed": freed,
                          "top": start + peak, "start": start})
    grouped = frame.groupby("key", sort=False)
    sums, first = grouped[["alloc", "freed"]].sum().reindex(names), grouped["start"].first()
    return {f"{device}_alloc_bytes": sums["alloc"].to_numpy(np.int64),
            f"{device}_freed_bytes": sums["freed"].to_numpy(np.int64),
            f"{device}_peak_bytes": (grouped["top"].max() - first).reindex(names).to_numpy(np.int64)}


def input_shape_keys(nodes: pd.DataFrame) -> list[str]:
    """One key per node: its op and input shapes, split again by `split_shape_key`. The op is
    the module type for module calls (all Conv2d calls on one shape group together, as
    torch.profiler's group_by_input_shape groups aten ops) and the target otherwise.

    Example:
        >>> nodes = pd.DataFrame({"op": ["call_module", "call_function"],
        ...     "target": ["layer1.conv", "torch.relu"], "module_type": ["Conv2d", "Net"],
        ...     "input_shapes": ["([1, 3] float32)", "([1, 3] float32)"]})
        >>> [split_shape_key(key) for key in input_shape_keys(nodes)]
        [('Conv2d', '([1, 3] float32)'), ('torch.relu', '([1, 3] float32)')]
    """
    if "input_shapes" not in nodes:
        raise ArgumentError("group_by='input_shape' needs an input_shapes column "
                         "(profiles made by pyfxprof.profile have one)")
    ops = op_kind_keys(nodes)
    shapes = nodes["input_shapes"].astype(str)
    return [f"{op}{SHAPE_SEPARATOR}{shape}" for op, shape in zip(ops, shapes)]


def split_shape_key(key: str) -> tuple[str, str]:
    """(target, input shapes) of an `input_shape_keys` key."""
    target, _, shapes = key.partition(SHAPE_SEPARATOR)
    return target, shapes


def inclusive_medians(samples: np.ndarray, paths: list[str], max_depth: int | None = None
                      ) -> dict[str, float]:
    """Median over runs of the per-run inclusive sum of every module, by path, parents first
    and children in first-appearance order; "" is the root (all nodes).

    Example:
        >>> inclusive_medians(np.array([[1, 2, 4], [3, 2, 4]]), ["a.b", "a", "c"])
        {'': 8.0, 'a': 4.0, 'c': 4.0, 'a.b': 2.0}
    """
    samples = np.asarray(samples)
    depths = np.array([_depth(p) for p in paths], dtype=np.int64)
    deepest = int(depths.max(initial=0)) if max_depth is None else max_depth
    medians = {"": float(np.median(samples.sum(axis=1)))}
    for depth in range(1, deepest + 1):
        inside = np.flatnonzero(depths >= depth)
        if len(inside) == 0:
            break
        names, sums = group_samples(samples[:, inside], [cut(paths[i], depth) for i in inside])
        medians.update(zip(names, np.median(sums, axis=0).tolist()))
    return medians


def module_tree(profile, max_depth: int | None = None) -> str:
    """The module hierarchy as an indented tree: per module its median inclusive time (median
    over runs of the sum of its nodes) and percent of the root's; for training steps also its
    backward's median inclusive time and the backward/forward ratio.

    Example:
        >>> print(module_tree(prof, max_depth=1))  # doctest: +SKIP
        ResNet         1.21 ms  100.0%
        ├─ conv1       95.1 µs    7.9%
        └─ layer1       402 µs   33.2%
    """
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int)
                                  or max_depth < 1):
        raise ArgumentError(f"max_depth must be None or a positive int, got {max_depth!r}")
    paths = [str(p) for p in profile.nodes["module_path"]]
    medians = inclusive_medians(profile.samples, paths, max_depth)
    types = dict(zip(paths, profile.nodes["module_type"].astype(str)))
    children: dict[str, list[str]] = {}
    for path in list(medians)[1:]:
        children.setdefault(cut(path, _depth(path) - 1), []).append(path)
    root = str(profile.meta.get("model") or types.get("", "model"))
    rows = [(root, "")] + _tree_rows("", children, types, "")
    lines = [(label, medians[path]) for label, path in rows]
    outside = tree_rows(profile)  # the Python outside the graph: the root's last child
    text = _render_rows(_with_sibling_below(lines) + outside if outside else lines, medians[""])
    if profile.backward_samples is None:
        return text
    backward = inclusive_medians(profile.backward_samples, paths, max_depth)
    return "\n".join(f"{line}  backward {_with_ratio(backward.get(path, 0.0), medians[path])}"
                     for line, (_, path) in zip(text.splitlines(), rows))


def _with_sibling_below(lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Tree lines whose root's last child gets a sibling after it (its branch and the
    lines under it continue)."""
    last = max((i for i, (label, _) in enumerate(lines) if label.startswith("└─")), default=None)
    if last is None:
        return lines
    return (lines[:last] + [("├─" + lines[last][0][2:], lines[last][1])]
            + [("│" + label[1:], value) for label, value in lines[last + 1:]])


def _with_ratio(backward: float, forward: float) -> str:
    """"1.2 ms (2.1x)": a backward median and its ratio to the forward's."""
    ratio = f"{backward / forward:.1f}x" if forward else "-"
    return f"{format_ns(backward):>9} ({ratio})"


def _tree_rows(parent: str, children: dict, types: dict, prefix: str) -> list[tuple[str, str]]:
    """(label, module path) of each module under `parent`, depth first."""
    rows = []
    kids = children.get(parent, [])
    for i, path in enumerate(kids):
        last = i == len(kids) - 1
        name = path.rpartition(".")[2]
        label = f"{name} ({types[path]})" if path in types else name
        rows.append((f"{prefix}{'└─' if last else '├─'} {label}", path))
        rows += _tree_rows(path, children, types, prefix + ("   " if last else "│  "))
    return rows


def _render_rows(rows: list[tuple[str, float]], root_median: float) -> str:
    times = [format_ns(value) for _, value in rows]
    pcts = [format_pct(100.0 * value / root_median if root_median else 0.0) for _, value in rows]
    label_width = max(len(label) for label, _ in rows)
    time_width, pct_width = max(map(len, times)), max(map(len, pcts))
    return "\n".join(f"{label.ljust(label_width)}  {t.rjust(time_width)}  {p.rjust(pct_width)}"
                     for (label, _), t, p in zip(rows, times, pcts))
