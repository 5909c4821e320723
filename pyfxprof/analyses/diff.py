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

import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .. import served_methods
from ..data.outside_graph import graph_only, outside_column, summed_rows
from ..data.sessions import merge_sessions, run_groups
from ..data.validate import NOT_NODES
from ..data.profile import Profile
from ..stats.confidence import FALSE_DISCOVERY_RATE
from ..errors import ArgumentError, PyfxprofError
from ..stats.row_verdicts import (Design, design_of, judge, paired_medians, row_spreads,
                                   with_node_noise)
from ..stats.session_tests import run_dispersion
from ..views.diff_text import regression_line
from .compiled_diff import CompiledDiff, is_compiled_profile
from .diff_sides import BY_CHOICES  # noqa: F401  (the views' names, imported from here by cli)
from .diff_sides import (Side, align_view, backward_columns, check_settings, check_view,
                         column_median, distinct_labels, fused_into, like_totals, load_input,
                         reduce_view, view_keys)
from .exported import ExportedDiff, is_exported_profile

#: TraceDiff's category of each ``change`` (``fused`` is pyfxprof's own).
OPS_DIFF_CATEGORIES = {"added": "added", "removed": "deleted", "+": "increased",
                       "-": "decreased", "=": "unchanged", "?": "unresolved",
                       "fused": "fused"}
#: Fewest runs per side for a p-value (below it ``p_value`` is NaN).
MIN_RUNS = 5
_IDENTITY = ("name", "op", "target", "module_path", "module_type")


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
        check_settings(min_change, alpha, min_runs)
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
            sides = [reduce_view(prof, view_keys(prof.nodes, "node", None))[:2]
                     for prof in (self.control, self.test)]
            skipped = {key for prof in (self.control, self.test) for key, op in
                       zip(view_keys(prof.nodes, "node", None), prof.nodes["op"])
                       if op in NOT_NODES}
            common = [key for key in sides[0][0] if key in set(sides[1][0]) - skipped]
            control, test = (align_view(names, sums, np.zeros(len(names)), common).samples
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
            node_z = z.reindex(view_keys(self.control.nodes, "node", None)).to_numpy()
        return row_spreads(noise, durations, control_keys, keys, self._node_dispersion(),
                           node_z)

    def _node_dispersion(self) -> np.ndarray | None:
        """One session per side: each control node's run-to-run dispersion, pooled with the
        test's where the test has the node (stats.session_tests.run_dispersion)."""
        if self.design.kind != "single" or self.test.n_runs == 0:
            return None
        control = run_dispersion(self.control.samples)
        test = pd.Series(run_dispersion(self.test.samples),
                         index=view_keys(self.test.nodes, "node", None))
        test = test[~test.index.duplicated()]
        paired = test.reindex(view_keys(self.control.nodes, "node", None)).to_numpy()
        return np.sqrt((control ** 2 + np.where(np.isnan(paired), control, paired) ** 2) / 2)

    def _tests(self, control: Side, test: Side, rel_change: np.ndarray,
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

    def _columns(self, control: Side, test: Side, whole: bool = False
                 ) -> dict[str, np.ndarray]:
        """Per-side and difference columns of aligned sides (see :meth:`changes`)."""
        columns = {}
        for name, side in (("control", control), ("test", test)):
            columns[f"counts_{name}"] = side.calls
            columns[f"total_{name}"] = side.samples.sum(axis=0).astype(np.float64)
            columns[f"median_{name}"] = column_median(side.samples)
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
        check_view(by, depth)
        control_keys = view_keys(self.control.nodes, by, depth)
        keys, control, test = self._sides(control_keys, by, depth)
        columns = self._columns(control, test)
        frame = pd.DataFrame(columns, index=pd.Index(keys, name=by, dtype=object))
        total = column_median(self.control.run_totals[:, None])[0]
        frame.insert(3, "pct_control", frame["median_control"] / total * 100.0)
        frame = self._with_fused(frame, control_keys)
        frame = self._with_backward(frame, control_keys, view_keys(self.test.nodes, by, depth))
        if by == "node":
            frame = pd.concat([self._identity(keys), frame], axis=1)
        frame.attrs.update(labels=self.labels, runs=(self.control.n_runs, self.test.n_runs),
                           by=by, depth=depth, testable=self.testable, min_runs=self.min_runs)
        return frame

    def _sides(self, control_keys: list, by: str, depth: int | None
               ) -> tuple[list, Side, Side]:
        """(keys, control, test) of a view: control keys first (execution order), then the
        test's added ones; each side's per-run sums aligned to them, with its runs' groups,
        and the control's rows' noise (:meth:`_row_spreads`)."""
        c_names, c_sums, c_calls = reduce_view(self.control, control_keys)
        t_names, t_sums, t_calls = reduce_view(self.test, view_keys(self.test.nodes, by, depth))
        known = set(c_names)
        keys = list(c_names) + [k for k in t_names if k not in known]
        control = align_view(c_names, c_sums, c_calls, keys)
        test = align_view(t_names, t_sums, t_calls, keys)
        control.groups, test.groups = self.groups
        control.spreads = self._row_spreads(control_keys, keys)
        return keys, control, test

    def compare(self, by: str = "node", depth: int | None = None) -> pd.DataFrame:
        """Deprecated name of :meth:`changes` (a DataFrame; ``pyfxprof.compare`` is the A/B
        run), kept for one release: warns, then returns ``self.changes(by, depth)``."""
        warnings.warn("ProfileDiff.compare() is deprecated and will be removed in the next "
                      "release; use ProfileDiff.changes()", DeprecationWarning, stacklevel=2)
        return self.changes(by, depth)

    def _with_fused(self, frame: pd.DataFrame, control_keys: list) -> pd.DataFrame:
        """Rows removed because the test folded their BN into a conv: change "fused" and
        the conv in ``fused_into``."""
        fused = fused_into(self.control, control_keys, self.test.meta)
        is_fused = (frame["change"] == "removed") & frame.index.isin(list(fused))
        frame.loc[is_fused, "change"] = "fused"
        frame["fused_into"] = [fused[k] if f else "" for k, f in zip(frame.index, is_fused)]
        return frame

    def _with_backward(self, frame: pd.DataFrame, control_keys: list, test_keys: list
                       ) -> pd.DataFrame:
        """`frame` plus the backward columns when both profiles are training steps."""
        if self.control.backward_samples is None or self.test.backward_samples is None:
            return frame
        return frame.assign(**backward_columns(self.control, self.test, control_keys,
                                                test_keys, list(frame.index)))

    def _identity(self, keys: list[str]) -> pd.DataFrame:
        """Identity columns per node key, from the control where present, else the test."""
        parts = [prof.nodes[list(_IDENTITY)].set_axis(view_keys(prof.nodes, "node", None))
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
        sides = [Side(np.ones(1, dtype=bool), prof.run_totals[:, None], np.ones(1), groups)
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
