"""The sides of a profile diff: the inputs read (profiles, saved files, torch.profiler
traces), each profile reduced to a view's keys (nodes, ops, modules) with its per-run sums
aligned to the union of both sides' keys, the backward and fused columns, and run totals of
one kind on both sides (analyses.diff.ProfileDiff compares them).

Example:
    >>> distinct_labels(("run", "run"))
    ('run', 'run (2)')
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import torch_trace
from ..data.outside_graph import graph_only, outside_column, summed_rows
from ..data.profile import Profile
from ..errors import ArgumentError, PyfxprofError, fraction, margin, whole_number
from ..stats.node_statistics import group_samples
from ..views.report import check_depth

#: Views of :meth:`analyses.diff.ProfileDiff.changes`: one row per node, or per value of a
#: node column, or per module (optionally cut at a depth).
BY_CHOICES = ("node", "op", "target", "module_type", "module")


def distinct_labels(labels) -> tuple[str, str]:
    """The two labels as strings; identical ones are made distinct, never merged.

    >>> distinct_labels(("run", "run"))
    ('run', 'run (2)')
    """
    if isinstance(labels, str) or len(labels) != 2:
        raise ArgumentError(f"labels must be two strings (control, test), got {labels!r}")
    first, second = (str(label) for label in labels)
    return (first, second) if first != second else (first, f"{second} (2)")


def load_input(source) -> Profile:
    """A Profile from a Profile, a pyfxprof profile file (.json / .json.gz), a torch.profiler
    Chrome trace file, or a directory of trace files (one run per file).

    >>> load_input("missing.json")
    Traceback (most recent call last):
    ...
    pyfxprof.errors.PyfxprofError: cannot read missing.json: no such file; check the path
    """
    if isinstance(source, Profile):
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise ArgumentError(f"expected a Profile or a path, got {type(source).__name__}")
    path = Path(source)
    if path.is_dir():
        return torch_trace.load_trace(path)
    data = torch_trace.read_json(path)
    if isinstance(data, dict) and "traceEvents" in data:
        return torch_trace.profile_from_traces([(path, data)], path.name)
    from ..data import persist
    try:
        return persist.from_document(data)
    except persist.FormatError as error:
        raise PyfxprofError(f"cannot read {path}: {error}; expected a pyfxprof profile or a "
                            "torch.profiler trace (traceEvents)") from None


def view_keys(nodes: pd.DataFrame, by: str, depth: int | None) -> list[str]:
    """One comparison key per node: "module_path/name" (root: name), or the ``by`` column."""
    if by == "node":
        return [f"{path}/{name}" if path else str(name)
                for path, name in zip(nodes["module_path"], nodes["name"])]
    if by == "module":
        return [".".join(str(path).split(".")[:depth]) for path in nodes["module_path"]]
    return nodes[by].astype(str).tolist()


@dataclass
class Side:
    """One profile reduced to a view: per-run sums per key, aligned to the union of keys."""

    present: np.ndarray   # bool (keys,)
    samples: np.ndarray   # int64 (runs, keys), 0 where absent
    calls: np.ndarray     # float (keys,), calls per run
    groups: np.ndarray | None = None   # int (runs,): block or session of each run
    spreads: np.ndarray | None = None  # float (keys,): each row's noise (row_spreads)


def reduce_view(profile: Profile, keys: list[str]) -> tuple[list, np.ndarray, np.ndarray]:
    """Keys in first-appearance order, per-run sums and calls per run of each key."""
    names, sums = group_samples(profile.samples, keys)
    calls = (profile.nodes["calls"].astype(float) if "calls" in profile.nodes
             else pd.Series(1.0, index=profile.nodes.index))
    per_key = calls.groupby(np.asarray(keys, dtype=object), sort=False).sum()
    return names, sums, per_key.reindex(names).to_numpy(dtype=np.float64)


def align_view(names: list, sums: np.ndarray, calls: np.ndarray, keys: list) -> Side:
    """One side's reduced columns placed at their positions among all ``keys``."""
    position = pd.Index(names, dtype=object).get_indexer(pd.Index(keys, dtype=object))
    present = position >= 0
    samples = np.zeros((sums.shape[0], len(keys)), dtype=np.int64)
    samples[:, present] = sums[:, position[present]]
    aligned_calls = np.zeros(len(keys))
    aligned_calls[present] = calls[position[present]]
    return Side(present, samples, aligned_calls)


def backward_columns(control: Profile, test: Profile, control_keys: list, test_keys: list,
                      keys: list) -> dict[str, np.ndarray]:
    """Backward medians of both sides per key, their difference and relative change.

    Example: ``backward_columns(a, b, ["x"], ["x"], ["x"])["backward_diff"]`` -> ``[120.]``
    """
    medians = []
    for profile, own_keys in ((control, control_keys), (test, test_keys)):
        names, sums = group_samples(profile.backward_samples, own_keys)
        medians.append(column_median(align_view(names, sums, np.zeros(len(names)), keys).samples))
    diff = medians[1] - medians[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(medians[0] != 0, diff / medians[0], np.nan)
    return {"backward_median_control": medians[0], "backward_median_test": medians[1],
            "backward_diff": diff, "backward_rel_change": rel}


def column_median(samples: np.ndarray) -> np.ndarray:
    if samples.shape[0] == 0:
        return np.full(samples.shape[1], np.nan)
    return np.median(samples.astype(np.float64), axis=0)


def fused_into(control: Profile, keys: list[str], test_meta: dict) -> dict[str, str]:
    """Key -> conv path(s) for keys whose every control node is a BN folded away in test."""
    bn_to_conv = {bn: conv for conv, bn in test_meta.get("fused_pairs") or ()}
    if not bn_to_conv:
        return {}
    convs = control.nodes["module_path"].map(bn_to_conv)
    return {str(key): "; ".join(dict.fromkeys(group))  # keys are str; pandas types say tuple
            for key, group in convs.groupby(np.asarray(keys, dtype=object), sort=False)
            if group.notna().all()}


def check_settings(min_change, alpha, min_runs) -> None:
    margin("min_change", min_change)
    fraction("alpha", alpha)
    whole_number("min_runs", min_runs, minimum=2)


def check_view(by: str, depth) -> None:
    if by not in BY_CHOICES:
        raise ArgumentError(f"by must be one of {list(BY_CHOICES)}, got {by!r}")
    check_depth("by", by, depth)


def like_totals(control: Profile, test: Profile, labels: tuple[str, str]
                ) -> tuple[tuple[Profile, Profile], str | None]:
    """The two sides with run totals of one kind, and the label of the side whose
    ``(Python outside the graph)`` row was dropped (None: none). A side has that row only
    when its session resolved it above the noise (data.outside_graph), and its run totals
    are then the user's call, the other's the graph's: compared as they are, the totals of
    two sessions of one model differ by the whole row (7-30% of a small model, either way).
    When one side alone has it, both are compared as graphs: that row dropped
    (data.outside_graph.graph_only), the run totals each run's rows summed (summed_rows).

    >>> nodes = pd.DataFrame({"index": [0], "name": ["mm"], "op": ["call_function"],
    ...     "target": ["mm"], "module_path": [""], "module_type": ["M"], "module_stack": [()]})
    >>> from ..data.outside_graph import with_outside_graph
    >>> graph = Profile(nodes, np.array([[90]] * 6), np.array([100] * 6), {})
    >>> call = with_outside_graph(graph, [300, 310, 305, 290, 300, 320])
    >>> (a, b), dropped = like_totals(graph, call, ("main", "pr"))
    >>> dropped, b.run_totals.tolist()[:2]
    ('pr', [90, 90])
    """
    has = [outside_column(side) is not None for side in (control, test)]
    if has[0] == has[1]:
        return (control, test), None
    return ((summed_rows(graph_only(control)), summed_rows(graph_only(test))),
            labels[0 if has[0] else 1])
