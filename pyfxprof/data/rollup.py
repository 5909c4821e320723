"""Module hierarchy roll-up: group keys per module at a depth or per (op, input shapes), and
inclusive times per module (views/module_tree.py draws them as a tree).

Depth counts the components of a node's ``module_path``: at depth 1 ``layer1.0.conv1`` rolls up
into ``layer1``, at depth 2 into ``layer1.0`` (the same cut as ``Diff.changes(by="module")``).
A node whose module is shallower than the depth stays in its own module; when that module
also has deeper nodes, its row is labelled ``<path> (self)`` so that every row is either a
module's inclusive time or a module's own nodes, and rows add up to the total.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..stats.node_statistics import group_samples

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


def module_depth(path: str) -> int:
    """How many components `path` has (0 for the root's '')."""
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
    deeper = {cut(p, d) for p in set(paths) for d in range(1, min(module_depth(p), depth))}
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
    depths = np.array([module_depth(p) for p in paths], dtype=np.int64)
    deepest = int(depths.max(initial=0)) if max_depth is None else max_depth
    medians = {"": float(np.median(samples.sum(axis=1)))}
    for depth in range(1, deepest + 1):
        inside = np.flatnonzero(depths >= depth)
        if len(inside) == 0:
            break
        names, sums = group_samples(samples[:, inside], [cut(paths[i], depth) for i in inside])
        medians.update(zip(names, np.median(sums, axis=0).tolist()))
    return medians
