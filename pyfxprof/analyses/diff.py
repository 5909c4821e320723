"""A/B comparison of two profiles (control vs test) per node identity, with a significance test.

What Holistic Trace Analysis' TraceDiff does (counts and durations per op; ops added, deleted,
increased, decreased, unchanged; plots), plus: nodes line up by identity (module path + node
name), a Conv/BN pair folded by ``fuse_conv_bn`` shows as "fused", labels are deterministic and
never merged, and each row is tested against the noise of its design (stats/row_verdicts.py:
interleaved blocks, one session or several sessions per side) with the false discovery rate
controlled across rows, so noise does not look like a change. Works on pyfxprof profiles and
on torch.profiler traces. See docs/diff.md and docs/ab.md.

Example:
    >>> d = diff("before.json", "after.json")      # doctest: +SKIP
    >>> print(d.table(top=10)); d.ops_diff()["increased"]   # doctest: +SKIP
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING
from pathlib import Path

import numpy as np
import pandas as pd

from .. import served_methods
from ..data import torch_trace
from ..data.outside_graph import graph_only, outside_column, summed_rows
from ..data.sessions import merge_sessions, run_groups
from ..data.validate import NOT_NODES
from ..data.profile import Profile
from ..stats.confidence import FALSE_DISCOVERY_RATE
from ..stats.node_statistics import group_samples
from ..errors import ArgumentError, PyfxprofError, fraction, margin, whole_number
from ..stats.row_verdicts import (Design, design_of, judge, paired_medians, row_spreads,
                                   with_node_noise)
from ..stats.session_tests import run_dispersion
from ..views.diff_text import regression_line
from .compiled_diff import CompiledDiff, is_compiled_profile
from .exported import ExportedDiff, is_exported_profile

#: Views of :meth:`ProfileDiff.changes`: one row per node, or per value of a node column,
#: or per module (optionally cut at a depth).
BY_CHOICES = ("node", "op", "target", "module_type", "module")
#: TraceDiff's category of each ``change`` (``fused`` is pyfxprof's own).
OPS_DIFF_CATEGORIES = {"added": "added", "removed": "deleted", "+": "increased",
                       "-": "decreased", "=": "unchanged", "?": "unresolved",
                       "fused": "fused"}
#: Fewest runs per side for a p-value (below it ``p_value`` is NaN).
MIN_RUNS = 5
_IDENTITY = ("name", "op", "target", "module_path", "module_type")


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


def _view_keys(nodes: pd.DataFrame, by: str, depth: int | None) -> list[str]:
    """One comparison key per node: "module_path/name" (root: name), or the ``by`` column."""
    if by == "node":
        return [f"{path}/{name}" if path else str(name)
                for path, name in zip(nodes["module_path"], nodes["name"])]
    if by == "module":
        return [".".join(str(path).split(".")[:depth]) for path in nodes["module_path"]]
    return nodes[by].astype(str).tolist()


@dataclass
class _Side:
    """One profile reduced to a view: per-run sums per key, aligned to the union of keys."""

    present: np.ndarray   # bool (keys,)
    samples: np.ndarray   # int64 (runs, keys), 0 where absent
    calls: np.ndarray     # float (keys,), calls per run
    groups: np.ndarray | None = None   # int (runs,): block or session of each run
    spreads: np.ndarray | None = None  # float (keys,): each row's noise (row_spreads)


def _reduce(profile: Profile, keys: list[str]) -> tuple[list, np.ndarray, np.ndarray]:
    """Keys in first-appearance order, per-run sums and calls per run of each key."""
    names, sums = group_samples(profile.samples, keys)
    calls = (profile.nodes["calls"].astype(float) if "calls" in profile.nodes
             else pd.Series(1.0, index=profile.nodes.index))
    per_key = calls.groupby(np.asarray(keys, dtype=object), sort=False).sum()
    return names, sums, per_key.reindex(names).to_numpy(dtype=np.float64)


def _align(names: list, sums: np.ndarray, calls: np.ndarray, keys: list) -> _Side:
    """One side's reduced columns placed at their positions among all ``keys``."""
    position = pd.Index(names, dtype=object).get_indexer(pd.Index(keys, dtype=object))
    present = position >= 0
    samples = np.zeros((sums.shape[0], len(keys)), dtype=np.int64)
    samples[:, present] = sums[:, position[present]]
    aligned_calls = np.zeros(len(keys))
    aligned_calls[present] = calls[position[present]]
    return _Side(present, samples, aligned_calls)


def _backward_columns(control: Profile, test: Profile, control_keys: list, test_keys: list,
                      keys: list) -> dict[str, np.ndarray]:
    """Backward medians of both sides per key, their difference and relative change.

    Example: ``_backward_columns(a, b, ["x"], ["x"], ["x"])["backward_diff"]`` -> ``[120.]``
    """
    medians = []
    for profile, own_keys in ((control, control_keys), (test, test_keys)):
        names, sums = group_samples(profile.backward_samples, own_keys)
        medians.append(_median(_align(names, sums, np.zeros(len(names)), keys).samples))
    diff = medians[1] - medians[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(medians[0] != 0, diff / medians[0], np.nan)
    return {"backward_median_control": medians[0], "backward_median_test": medians[1],
            "backward_diff": diff, "backward_rel_change": rel}


def _median(samples: np.ndarray) -> np.ndarray:
    if samples.shape[0] == 0:
        return np.full(samples.shape[1], np.nan)
    return np.median(samples.astype(np.float64), axis=0)


def _fused_into(control: Profile, keys: list[str], test_meta: dict) -> dict[str, str]:
    """Key -> conv path(s) for keys whose every control node is a BN folded away in test."""
    bn_to_conv = {bn: conv for conv, bn in test_meta.get("fused_pairs") or ()}
    if not bn_to_conv:
        return {}
    convs = control.nodes["module_path"].map(bn_to_conv)
    return {str(key): "; ".join(dict.fromkeys(group))  # keys are str; pandas types say tuple
            for key, group in convs.groupby(np.asarray(keys, dtype=object), sort=False)
            if group.notna().all()}


def _check_settings(min_change, alpha, min_runs) -> None:
    margin("min_change", min_change)
    fraction("alpha", alpha)
    whole_number("min_runs", min_runs, minimum=2)


def _check_view(by: str, depth) -> None:
    if by not in BY_CHOICES:
        raise ArgumentError(f"by must be one of {list(BY_CHOICES)}, got {by!r}")
    if depth is not None:
        if by != "module":
            raise ArgumentError(f"depth applies to by='module' only, got by={by!r}")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ArgumentError(f"depth must be None or a positive int, got {depth!r}")


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


@served_methods
class ProfileDiff:
    """Control vs test comparison; build it with :func:`diff`.

    Attributes: ``control``, ``test`` (Profiles), ``labels`` (two distinct str),
    ``min_change`` (the equivalence margin, fraction), ``alpha`` (the false discovery rate),
    ``min_runs``, ``testable`` (both sides have at least ``min_runs`` runs, so p-values
    exist), ``design`` (stats.row_verdicts.Design: "paired" blocks of pyfxprof.compare,
    "single" session or several "sessions" per side) and ``groups`` (each side's runs' block
    or session).

    >>> d = diff(control_profile, test_profile, labels=("main", "pr"))   # doctest: +SKIP
    >>> d.changes(by="module", depth=1)                                  # doctest: +SKIP
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS; tests/test_typing.py
        # checks each declaration against the serving function's signature
        def table(self, sort_by: str = "diff_duration", top: int | None = 20, by: str = "node",
                  depth: int | None = None, width: int | str | None = "auto") -> str: ...
        def _repr_html_(self) -> str: ...
        def __repr__(self) -> str: ...

    def __init__(self, control: Profile, test: Profile, labels=("control", "test"),
                 min_change: float = 0.05, alpha: float = FALSE_DISCOVERY_RATE,
                 min_runs: int = MIN_RUNS):
        _check_settings(min_change, alpha, min_runs)
        self.labels = distinct_labels(labels)
        (self.control, self.test), self.outside_dropped = like_totals(control, test,
                                                                      self.labels)
        self.min_change, self.alpha, self.min_runs = float(min_change), float(alpha), min_runs
        self.testable = min(control.n_runs, test.n_runs) >= min_runs
        self.groups = (run_groups(control.meta, control.n_runs, control.run_noise),
                       run_groups(test.meta, test.n_runs, test.run_noise))
        self.design = design_of(control.meta, test.meta, *self.groups)
        self._node_keys: list | None = None   # the nodes the design's noise was measured on

    def judged_design(self) -> Design:
        """The design, with the noise measured over the nodes both profiles have, whatever
        view is judged (group rows are too few to measure it; stats.row_verdicts.
        with_node_noise): one session per side, or the blocks of an interleaved run. The
        rows of data.validate.NOT_NODES are left out: not nodes (the Python outside the
        graph is the user's call less the nodes of another call, and moves between two
        sessions by -90% to +2700% on a small model)."""
        if self.design.kind in ("single", "paired") and self.design.noise is None:
            sides = [_reduce(prof, _view_keys(prof.nodes, "node", None))[:2]
                     for prof in (self.control, self.test)]
            skipped = {key for prof in (self.control, self.test) for key, op in
                       zip(_view_keys(prof.nodes, "node", None), prof.nodes["op"])
                       if op in NOT_NODES}
            common = [key for key in sides[0][0] if key in set(sides[1][0]) - skipped]
            control, test = (_align(names, sums, np.zeros(len(names)), common).samples
                             for names, sums in sides)
            self.design = with_node_noise(self.design, control, test, *self.groups)
            self._node_keys = common
        return self.design

    def _row_spreads(self, control_keys: list, keys: list) -> np.ndarray | None:
        """Each row's noise from the spreads of its control nodes (row_verdicts.
        row_spreads), when the design measured a noise over the nodes; one session per side,
        with the nodes' run-to-run dispersions pooled over the two sides."""
        noise = self.judged_design().noise
        if noise is None or not noise.measured or self.control.n_runs == 0:
            return None
        durations = np.median(self.control.samples.astype(np.float64), axis=0)
        node_z = None
        if self._node_keys is not None and len(self._node_keys) == len(self.design.standardized):
            z = pd.Series(self.design.standardized, index=self._node_keys, dtype=np.float64)
            node_z = z.reindex(_view_keys(self.control.nodes, "node", None)).to_numpy()
        return row_spreads(noise, durations, control_keys, keys, self._node_dispersion(),
                           node_z)

    def _node_dispersion(self) -> np.ndarray | None:
        """One session per side: each control node's run-to-run dispersion, pooled with the
        test's where the test has the node (stats.session_tests.run_dispersion)."""
        if self.design.kind != "single" or self.test.n_runs == 0:
            return None
        control = run_dispersion(self.control.samples)
        test = pd.Series(run_dispersion(self.test.samples),
                         index=_view_keys(self.test.nodes, "node", None))
        test = test[~test.index.duplicated()]
        paired = test.reindex(_view_keys(self.control.nodes, "node", None)).to_numpy()
        return np.sqrt((control ** 2 + np.where(np.isnan(paired), control, paired) ** 2) / 2)

    def _tests(self, control: _Side, test: _Side, rel_change: np.ndarray,
               whole: bool) -> dict[str, np.ndarray]:
        """p_value, q_value, ci_low, ci_high, change (and rel_change: the design's estimate)
        of rows on both sides; without enough runs the relative change alone decides."""
        both = control.present & test.present
        columns = {name: np.full(both.shape, np.nan)
                   for name in ("p_value", "q_value", "ci_low", "ci_high")}
        change = np.full(both.shape, "=", dtype=object)
        rel_change = rel_change.copy()
        if not self.testable:
            change[both & (rel_change >= self.min_change)] = "+"
            change[both & (rel_change <= -self.min_change)] = "-"
        elif both.any():
            spreads = None if control.spreads is None else control.spreads[both]
            found = judge(self.judged_design(), control.samples[:, both],
                          test.samples[:, both], control.groups, test.groups,
                          self.min_change, self.alpha, whole, spreads)
            for name, key in (("p_value", "p_value"), ("q_value", "q_value"),
                              ("ci_low", "low"), ("ci_high", "high")):
                columns[name][both] = found[key]
            rel_change[both], change[both] = found["estimate"], found["change"]
        return {"rel_change": rel_change, **columns, "change": change}

    def _columns(self, control: _Side, test: _Side, whole: bool = False
                 ) -> dict[str, np.ndarray]:
        """Per-side and difference columns of aligned sides (see :meth:`changes`)."""
        columns = {}
        for name, side in (("control", control), ("test", test)):
            columns[f"counts_{name}"] = side.calls
            columns[f"total_{name}"] = side.samples.sum(axis=0).astype(np.float64)
            columns[f"median_{name}"] = _median(side.samples)
        columns["diff_counts"] = columns["counts_test"] - columns["counts_control"]
        columns["diff_duration"] = columns["median_test"] - columns["median_control"]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = columns["diff_duration"] / columns["median_control"]
        columns.update(self._tests(control, test, np.where(columns["median_control"] != 0,
                                                           rel, np.nan), whole))
        columns["change"][~control.present] = "added"
        columns["change"][~test.present] = "removed"
        return columns

    def changes(self, by: str = "node", depth: int | None = None) -> pd.DataFrame:
        """One row per key of the view, control keys first (execution order), then added ones.

        by: "node" (index "module_path/name", or the name at the root; same node across runs
        and code changes), "op", "target" or "module_type" (nodes sharing that value; "target"
        is TraceDiff's by-name view for traces), "module" (module path cut at ``depth``
        components; "" is the root). Group rows sum their nodes' per-run samples.

        Columns (times in ns, float; a side where the key is absent counts 0):
          name, op, target, module_path, module_type: identity (by="node" only; control's);
          counts_control, counts_test: calls per run (nodes in the row; traces: events per file);
          total_control, total_test: sum over all runs;
          median_control, median_test: median over runs of the per-run time;
          pct_control: median_control as % of the control's median run total;
          diff_counts: counts_test - counts_control;
          diff_duration: median_test - median_control (ns; > 0 is slower);
          rel_change, ci_low, ci_high: relative change (fraction; the design's estimate on
            both sides) and its interval at the level the selection leaves (docs/diff.md);
            p_value: the design's test (NaN unless on both sides with >= min_runs runs
            each); q_value: Benjamini–Hochberg;
          change (stats/verdict_rule.py): "+"/"-", "=" (interval inside ±min_change), "?"
            (unresolved), "added" / "removed" (one side
            only), "fused" (a control-only BN folded into a test conv, meta["fused_pairs"]);
          fused_into: that conv's module path for "fused" rows, else "".
          backward_median_control/_test, backward_diff, backward_rel_change: training steps.
        ``df.attrs`` holds labels, runs (control, test), by, depth, testable and min_runs.

        >>> df = d.changes(by="module", depth=1)                   # doctest: +SKIP
        >>> df.loc["layer1", ["median_control", "median_test", "change"]]  # doctest: +SKIP
        """
        _check_view(by, depth)
        control_keys = _view_keys(self.control.nodes, by, depth)
        c_names, c_sums, c_calls = _reduce(self.control, control_keys)
        t_names, t_sums, t_calls = _reduce(self.test, _view_keys(self.test.nodes, by, depth))
        known = set(c_names)
        keys = list(c_names) + [k for k in t_names if k not in known]
        control = _align(c_names, c_sums, c_calls, keys)
        test = _align(t_names, t_sums, t_calls, keys)
        control.groups, test.groups = self.groups
        control.spreads = self._row_spreads(control_keys, keys)
        columns = self._columns(control, test)
        frame = pd.DataFrame(columns, index=pd.Index(keys, name=by, dtype=object))
        total = _median(self.control.run_totals[:, None])[0]
        frame.insert(3, "pct_control", frame["median_control"] / total * 100.0)
        frame = self._with_fused(frame, control_keys)
        frame = self._with_backward(frame, control_keys, _view_keys(self.test.nodes, by, depth))
        if by == "node":
            frame = pd.concat([self._identity(keys), frame], axis=1)
        frame.attrs.update(labels=self.labels, runs=(self.control.n_runs, self.test.n_runs),
                           by=by, depth=depth, testable=self.testable, min_runs=self.min_runs)
        return frame

    def compare(self, by: str = "node", depth: int | None = None) -> pd.DataFrame:
        """Deprecated name of :meth:`changes` (a DataFrame; ``pyfxprof.compare`` is the A/B
        run), kept for one release: warns, then returns ``self.changes(by, depth)``."""
        warnings.warn("ProfileDiff.compare() is deprecated and will be removed in the next "
                      "release; use ProfileDiff.changes()", DeprecationWarning, stacklevel=2)
        return self.changes(by, depth)

    def _with_fused(self, frame: pd.DataFrame, control_keys: list) -> pd.DataFrame:
        """Rows removed because the test folded their BN into a conv: change "fused" and
        the conv in ``fused_into``."""
        fused = _fused_into(self.control, control_keys, self.test.meta)
        is_fused = (frame["change"] == "removed") & frame.index.isin(list(fused))
        frame.loc[is_fused, "change"] = "fused"
        frame["fused_into"] = [fused[k] if f else "" for k, f in zip(frame.index, is_fused)]
        return frame

    def _with_backward(self, frame: pd.DataFrame, control_keys: list, test_keys: list
                       ) -> pd.DataFrame:
        """`frame` plus the backward columns when both profiles are training steps."""
        if self.control.backward_samples is None or self.test.backward_samples is None:
            return frame
        return frame.assign(**_backward_columns(self.control, self.test, control_keys,
                                                test_keys, list(frame.index)))

    def _identity(self, keys: list[str]) -> pd.DataFrame:
        """Identity columns per node key, from the control where present, else the test."""
        parts = [prof.nodes[list(_IDENTITY)].set_axis(_view_keys(prof.nodes, "node", None))
                 for prof in (self.control, self.test)]
        merged = pd.concat(parts)
        return merged[~merged.index.duplicated()].reindex(keys)

    def totals(self) -> dict:
        """End-to-end run time compared: the :meth:`changes` columns of one row, as a dict;
        for an interleaved comparison (design "paired") the medians are over the paired
        blocks (each side's median of its block medians), as the estimate pairs them.

        >>> d.totals()["rel_change"]        # doctest: +SKIP
        -0.118
        """
        sides = [_Side(np.ones(1, dtype=bool), prof.run_totals[:, None], np.ones(1), groups)
                 for prof, groups in zip((self.control, self.test), self.groups)]
        columns = self._columns(sides[0], sides[1], whole=True)
        if self.design.kind == "paired" and self.testable:  # the blocks the estimate pairs
            columns["median_control"], columns["median_test"] = paired_medians(
                sides[0].samples, sides[1].samples, *self.groups)
            columns["diff_duration"] = columns["median_test"] - columns["median_control"]
        return {name: value.tolist()[0] for name, value in columns.items()}

    def graph_totals(self) -> dict | None:
        """:meth:`totals` of the graph alone (each run's node rows summed, the ``(Python
        outside the graph)`` row left out) when a side's run totals are the user's call
        (that row is the call less the nodes of another call: between two sessions of a
        small model it moved from 351 to 72 us while both long nodes were 15% slower, the
        call's total -9%); None when the totals already are the graph's.

        >>> d.graph_totals()["rel_change"]   # doctest: +SKIP
        0.152
        """
        if all(outside_column(side) is None for side in (self.control, self.test)):
            return None
        graph = ProfileDiff(summed_rows(graph_only(self.control)),
                            summed_rows(graph_only(self.test)), self.labels, self.min_change,
                            self.alpha, self.min_runs)
        graph.design, graph._node_keys = self.judged_design(), self._node_keys
        return graph.totals()

    def ops_diff(self, by: str = "node", depth: int | None = None) -> dict[str, list]:
        """Keys per TraceDiff category: added, deleted, increased, decreased, unchanged, and
        fused (BNs folded into a conv), and unresolved (the interval too wide to tell). Increased /
        decreased are the "+" / "-" verdicts of :meth:`changes`, so noise does not land there.

        >>> d.ops_diff()["increased"]       # doctest: +SKIP
        ['layer1.0.conv1/layer1_0_conv1']
        """
        change = self.changes(by, depth)["change"]
        result: dict[str, list] = {category: [] for category in OPS_DIFF_CATEGORIES.values()}
        for key, value in change.items():
            result[OPS_DIFF_CATEGORIES[value]].append(key)
        return result

    def regressions(self, threshold: float, min_share: float = 1.0) -> list[str]:
        """One line per "slower" verdict (:meth:`changes`'s "+") of at least ``threshold``
        (fraction): of the run total (one session per side, also of the graph's:
        :meth:`graph_totals`), or of a node worth >= ``min_share`` % of the control
        total (a model's node: the rows of data.validate.NOT_NODES, such as the Python
        outside the graph, whose figure one session measures against another invocation,
        count through the total). Without enough runs for a test, any slowdown of at least
        ``threshold``.

        >>> d.regressions(0.05)            # doctest: +SKIP
        ['node layer1.0.conv1/layer1_0_conv1: 1.00 ms → 2.00 ms (+100.0%, p 0.00018)']
        """
        totals = pd.DataFrame([self.totals()], index=["total run time"])
        graph = self.graph_totals() if self.design.kind == "single" else None
        if graph is not None:
            totals.loc["graph total (its nodes summed)"] = graph
        frame = self.changes()
        nodes = frame[(frame["pct_control"] >= min_share) & ~frame["op"].isin(NOT_NODES)
                      & frame["change"].isin(["+", "-", "="])]
        rows = pd.concat([totals, nodes[totals.columns].set_axis("node " + nodes.index)])
        slower = rows[(rows["rel_change"] >= threshold) & (rows["change"] == "+")]
        return [regression_line(str(what), row) for what, row in slower.iterrows()]


def diff(control, test, labels=("control", "test"), min_change: float = 0.05,
         alpha: float = FALSE_DISCOVERY_RATE,
         min_runs: int = MIN_RUNS) -> ProfileDiff | CompiledDiff:
    """Compare a control and a test profile.

    control, test: Profile objects or paths (pyfxprof profile .json / .json.gz, torch.profiler
    Chrome trace, or a directory of traces, one run per file; see :func:`load_input`), or a
    list of them per side: several sessions of one model (data.sessions.merge_sessions),
    tested between sessions.
    labels: display names (identical ones are made distinct: "run", "run (2)").
    min_change: the equivalence margin (fraction, 0.05 = 5%): smaller changes are "same".
    alpha: the false discovery rate across rows (Benjamini–Hochberg) of the design's test:
    the two sides of one pyfxprof.compare() are paired by block; one session per side tests
    each row against the shift and spread between the sessions; several per side, a t-test
    over sessions (docs/diff.md).
    min_runs: fewest runs per side for p-values; with fewer, p_value is NaN and categories
    use the relative change alone (like TraceDiff). Host times only.
    An eager profile against a compiled one (profile(torch.compile(m))), in either order,
    gives an analyses.compiled.CompiledDiff instead: per module path, eager vs kernel time
    (the eager side first). A training-step profile (backward=True) against a forward-only
    one is refused.

    >>> d = diff("base.json", "pr.json", labels=("main", "pr"))   # doctest: +SKIP
    >>> print(d.table(top=10))                                     # doctest: +SKIP
    """
    control, test = _load_side(control, "control"), _load_side(test, "test")
    labels = distinct_labels(labels)
    _check_same_step(control, test, labels)
    if is_compiled_profile(control) != is_compiled_profile(test):  # eager always first
        return (CompiledDiff(test, control, labels[::-1]) if is_compiled_profile(control)
                else CompiledDiff(control, test, labels))
    if is_exported_profile(test) and not is_exported_profile(control):
        return ExportedDiff(control, test, labels)
    return ProfileDiff(control, test, labels, min_change, alpha, min_runs)


def _load_side(source, side: str) -> Profile:
    """One side of diff(): a profile or path, or a list of them (sessions) merged."""
    if isinstance(source, (list, tuple)):
        if not source:
            raise ArgumentError(f"{side}: an empty list of profiles; give at least one")
        return merge_sessions([load_input(item) for item in source])
    return load_input(source)


def _check_same_step(control: Profile, test: Profile, labels: tuple[str, str]) -> None:
    """PyfxprofError when one side timed training steps (profile(backward=True)) and the
    other the forward alone: their totals and nodes do not compare."""
    trained = [profile.backward_samples is not None for profile in (control, test)]
    if trained[0] != trained[1]:
        steps, forward = (labels[0], labels[1]) if trained[0] else (labels[1], labels[0])
        raise PyfxprofError(f"{steps} timed forward and backward (backward=True) and {forward} "
                            "the forward alone: their times do not compare; profile both the "
                            "same way")
