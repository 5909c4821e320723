"""A/B comparison of two profiles (control vs test) per node identity, with a significance test.

What Holistic Trace Analysis' TraceDiff does (counts and durations per op; ops added, deleted,
increased, decreased, unchanged; plots), plus: nodes line up by identity (module path + node
name), a Conv/BN pair folded by ``fuse_conv_bn`` shows as "fused", labels are deterministic and
never merged, and each row is tested against the noise of its design (data/change_verdicts.py:
interleaved blocks, one session or several sessions per side) with the false discovery rate
controlled across rows, so noise does not look like a change. Works on pyfxprof profiles and
on torch.profiler traces. See docs/diff.md and docs/ab.md.

Example:
    >>> d = diff("before.json", "after.json")      # doctest: +SKIP
    >>> print(d.table(top=10)); d.ops_diff()["increased"]   # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..data import torch_trace
from ..data.change_verdicts import Design, design_of, judge, run_groups, single_noise
from ..data.paired_stats import smallest_resolvable
from ..data.sessions import merge_sessions
from ..data.profile import Profile
from ..data.stats import group_samples
from ..data.units import MISSING, format_ns, format_pct
from ..errors import ArgumentError, PyfxprofError
from ..views import report_render
from ..views.diff_plots import node_label
from ..views.report_header import numeric_mode_difference
from .compiled_diff import CompiledDiff, is_compiled_profile
from .exported import ExportedDiff, is_exported_profile

#: Views of :meth:`ProfileDiff.compare`: one row per node, or per value of a node column,
#: or per module (optionally cut at a depth).
BY_CHOICES = ("node", "op", "target", "module_type", "module")
#: Sort keys of :meth:`ProfileDiff.table`; diff columns sort by absolute value, descending.
SORT_KEYS = ("diff_duration", "rel_change", "diff_counts", "p_value", "q_value",
             "median_control", "median_test", "name", "order")
#: Values of the ``change`` column.
CHANGES = ("+", "-", "=", "?", "added", "removed", "fused")
#: TraceDiff's category of each ``change`` (``fused`` is pyfxprof's own).
OPS_DIFF_CATEGORIES = {"added": "added", "removed": "deleted", "+": "increased",
                       "-": "decreased", "=": "unchanged", "?": "unresolved",
                       "fused": "fused"}
#: Longest key shown by :meth:`ProfileDiff.table`; longer ones keep their tail.
KEY_WIDTH = 48
#: Fewest runs per side for a p-value (below it ``p_value`` is NaN).
MIN_RUNS = 5
_IDENTITY = ("name", "op", "target", "module_path", "module_type")
_ABS_SORT = ("diff_duration", "rel_change", "diff_counts")
_CHANGE_WORDS = {"+": "slower (+)", "-": "faster (-)", "=": "same (=)", "?": "unresolved (?)"}
_VERDICTS = {"+": "slower", "-": "faster", "=": "same within ±{margin}", "?": "unresolved"}
_DESIGN_WORDS = {
    "paired": "interleaved A/B, {blocks} paired blocks: signed-rank test per row, "
              "Hodges–Lehmann 95% interval",
    "single": "one session per side: rows tested against the session-level noise "
              "(the test session is {shift} as a whole, per-row spread ±{spread})",
    "unmeasured": "one session per side, too few rows to measure the noise between "
                  "sessions: runs inside each session are the only noise counted (a drift "
                  "between sessions can look like a change; see docs/diff.md)",
    "sessions": "{sessions} sessions: t-test over sessions per row (moderated variance)"}
_TITLES = {"node": "Node", "op": "Op type", "target": "Op", "module_type": "Module type",
           "module": "Module"}


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


def _reduce(profile: Profile, keys: list[str]) -> tuple[list, np.ndarray, np.ndarray]:
    """Keys in first-appearance order, per-run sums and calls per run of each key."""
    names, sums = group_samples(profile.samples, keys)
    calls = (profile.nodes["calls"].astype(float) if "calls" in profile.nodes
             else pd.Series(1.0, index=profile.nodes.index))
    per_key = calls.groupby(np.asarray(keys, dtype=object), sort=False).sum()
    return names, sums, per_key.reindex(names).to_numpy(dtype=np.float64)


def _align(names: list, sums: np.ndarray, calls: np.ndarray, keys: list) -> _Side:
    """One side's reduced columns placed at their positions among all ``keys``."""
    position = pd.Index(names, dtype=object).get_indexer(keys)
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
    return {key: "; ".join(dict.fromkeys(group))
            for key, group in convs.groupby(np.asarray(keys, dtype=object), sort=False)
            if group.notna().all()}


def _check_settings(min_change, alpha, min_runs) -> None:
    if not 0 <= min_change < float("inf"):
        raise ArgumentError(f"min_change must be a fraction >= 0 (0.05 = 5%), got {min_change!r}")
    if not 0 < alpha < 1:
        raise ArgumentError(f"alpha must be between 0 and 1, got {alpha!r}")
    if isinstance(min_runs, bool) or not isinstance(min_runs, int) or min_runs < 2:
        raise ArgumentError(f"min_runs must be an int >= 2, got {min_runs!r}")


def _check_view(by: str, depth) -> None:
    if by not in BY_CHOICES:
        raise ArgumentError(f"by must be one of {list(BY_CHOICES)}, got {by!r}")
    if depth is not None:
        if by != "module":
            raise ArgumentError(f"depth applies to by='module' only, got by={by!r}")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ArgumentError(f"depth must be None or a positive int, got {depth!r}")


class ProfileDiff:
    """Control vs test comparison; build it with :func:`diff`.

    Attributes: ``control``, ``test`` (Profiles), ``labels`` (two distinct str),
    ``min_change`` (the equivalence margin, fraction), ``alpha`` (the false discovery rate),
    ``min_runs``, ``testable`` (both sides have at least ``min_runs`` runs, so p-values
    exist), ``design`` (data.change_verdicts.Design: "paired" blocks of pyfxprof.compare,
    "single" session or several "sessions" per side) and ``groups`` (each side's runs' block
    or session).

    >>> d = diff(control_profile, test_profile, labels=("main", "pr"))   # doctest: +SKIP
    >>> d.compare(by="module", depth=1)                                  # doctest: +SKIP
    """

    def __init__(self, control: Profile, test: Profile, labels=("control", "test"),
                 min_change: float = 0.05, alpha: float = 0.05, min_runs: int = MIN_RUNS):
        _check_settings(min_change, alpha, min_runs)
        self.control, self.test = control, test
        self.labels = distinct_labels(labels)
        self.min_change, self.alpha, self.min_runs = float(min_change), float(alpha), min_runs
        self.testable = min(control.n_runs, test.n_runs) >= min_runs
        self.groups = (run_groups(control.meta, control.n_runs, control.run_noise),
                       run_groups(test.meta, test.n_runs, test.run_noise))
        self.design = design_of(control.meta, test.meta, *self.groups)

    def _judged_design(self) -> Design:
        """The design, with one session per side its session noise measured over the nodes
        both profiles have (whatever view is judged: group rows are too few to measure it)."""
        if self.design.kind == "single" and self.design.noise is None:
            sides = [_reduce(prof, _view_keys(prof.nodes, "node", None))[:2]
                     for prof in (self.control, self.test)]
            common = [key for key in sides[0][0] if key in set(sides[1][0])]
            control, test = (_align(names, sums, np.zeros(len(names)), common).samples
                             for names, sums in sides)
            self.design = Design("single", single_noise(control, test))
        return self.design

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
            found = judge(self._judged_design(), control.samples[:, both],
                          test.samples[:, both], control.groups, test.groups,
                          self.min_change, self.alpha, whole)
            for name, key in (("p_value", "p_value"), ("q_value", "q_value"),
                              ("ci_low", "low"), ("ci_high", "high")):
                columns[name][both] = found[key]
            rel_change[both], change[both] = found["estimate"], found["change"]
        return {"rel_change": rel_change, **columns, "change": change}

    def _columns(self, control: _Side, test: _Side, whole: bool = False
                 ) -> dict[str, np.ndarray]:
        """Per-side and difference columns of aligned sides (see :meth:`compare`)."""
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

    def compare(self, by: str = "node", depth: int | None = None) -> pd.DataFrame:
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
            both sides, docs/diff.md) and its 95% interval; p_value: the design's test (NaN
            unless on both sides with >= min_runs runs each); q_value: Benjamini–Hochberg;
          change: "+" / "-" (q <= alpha, interval not inside ±min_change), "=" (inside: same),
            "?" (unresolved), "added" / "removed" (one side only), "fused" (a control-only
            BN folded into a conv of the test, per test.meta["fused_pairs"]);
          fused_into: that conv's module path for "fused" rows, else "".
          backward_median_control/_test, backward_diff, backward_rel_change: training steps.
        ``df.attrs`` holds labels, runs (control, test), by, depth, testable and min_runs.

        >>> df = d.compare(by="module", depth=1)                   # doctest: +SKIP
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
        """End-to-end run time compared: the :meth:`compare` columns of one row, as a dict.

        >>> d.totals()["rel_change"]        # doctest: +SKIP
        -0.118
        """
        sides = [_Side(np.ones(1, dtype=bool), prof.run_totals[:, None], np.ones(1), groups)
                 for prof, groups in zip((self.control, self.test), self.groups)]
        return {name: value.tolist()[0]
                for name, value in self._columns(*sides, whole=True).items()}

    def ops_diff(self, by: str = "node", depth: int | None = None) -> dict[str, list]:
        """Keys per TraceDiff category: added, deleted, increased, decreased, unchanged, and
        fused (BNs folded into a conv), and unresolved (the interval too wide to tell). Increased /
        decreased are the "+" / "-" verdicts of :meth:`compare`, so noise does not land there.

        >>> d.ops_diff()["increased"]       # doctest: +SKIP
        ['layer1.0.conv1/layer1_0_conv1']
        """
        change = self.compare(by, depth)["change"]
        result = {category: [] for category in OPS_DIFF_CATEGORIES.values()}
        for key, value in change.items():
            result[OPS_DIFF_CATEGORIES[value]].append(key)
        return result

    def regressions(self, threshold: float, min_share: float = 1.0) -> list[str]:
        """One line per "slower" verdict (:meth:`compare`'s "+") of at least ``threshold``
        (fraction): of the run total, or of a node worth >= ``min_share`` % of the control
        total. Without enough runs for a test, any slowdown of at least ``threshold``.

        >>> d.regressions(0.05)            # doctest: +SKIP
        ['node layer1.0.conv1/layer1_0_conv1: 1.00 ms → 2.00 ms (+100.0%, p 0.00018)']
        """
        totals = pd.DataFrame([self.totals()], index=["total run time"])
        frame = self.compare()
        nodes = frame[(frame["pct_control"] >= min_share) & frame["change"].isin(["+", "-", "="])]
        rows = pd.concat([totals, nodes[totals.columns].set_axis("node " + nodes.index)])
        slower = rows[(rows["rel_change"] >= threshold) & (rows["change"] == "+")]
        return [f"{what}: {format_ns(row['median_control'])} → {format_ns(row['median_test'])}"
                f" ({_signed_pct(row['rel_change'])}, {_interval_text(row)}, "
                f"q {_p_text(row['q_value'])})" for what, row in slower.iterrows()]

    def table(self, sort_by: str = "diff_duration", top: int | None = 20, by: str = "node",
              depth: int | None = None, width: int | str | None = "auto") -> str:
        """The comparison as aligned text: header (labels, runs, totals and their change,
        category counts, the test used), then the rows sorted by ``sort_by`` (SORT_KEYS).
        ``width`` as in Profile.table ("auto": the terminal's, when printing to one).

        >>> print(diff(control_profile, test_profile).table(top=5))   # doctest: +SKIP
        """
        view = self._view(sort_by, top, by, depth)
        return report_render.render_text(view, report_render.terminal_width() if width == "auto" else width)

    def _view(self, sort_by: str, top: int | None, by: str, depth) -> report_render.View:
        """The comparison as a report View (text and HTML render the same cells)."""
        if sort_by not in SORT_KEYS:
            raise ArgumentError(f"sort_by must be one of {list(SORT_KEYS)}, got {sort_by!r}")
        if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
            raise ArgumentError(f"top must be None or a positive int, got {top!r}")
        frame = _sorted(self.compare(by, depth), sort_by)
        shown = frame if top is None else frame.iloc[:top]
        columns = _table_columns(frame, self.labels, by)
        notes = ([f"… {len(frame) - len(shown)} more rows not shown (top={top})"]
                 if len(shown) < len(frame) else [])
        return report_render.View(
            header=self._header(frame, by, depth), titles=[c[0] for c in columns],
            right_aligned=[c[2] for c in columns],
            rows=[[fmt(key, row) for _, fmt, _ in columns] for key, row in shown.iterrows()],
            notes=notes)

    def _repr_html_(self) -> str:
        """The comparison (top 20 rows by |diff|) as an HTML table, for notebooks."""
        return report_render.render_html(self._view("diff_duration", 20, "node", None))

    def _header(self, frame: pd.DataFrame, by: str, depth) -> list[str]:
        (label_c, label_t), totals = self.labels, self.totals()
        sides = [f"{label} ({prof.meta.get('model', '?')}, {prof.n_runs} runs)"
                 for label, prof in zip(self.labels, (self.control, self.test))]
        view = by if depth is None else f"{by} at depth {depth}"
        counts = frame["change"].value_counts()
        summary = ", ".join(f"{counts.get(c, 0)} {_CHANGE_WORDS.get(c, c)}" for c in CHANGES)
        margin = format_pct(100 * self.min_change)
        if self.testable:
            test = (f"{self._design_text()}; Benjamini–Hochberg FDR {self.alpha:g} across rows, "
                    f"margin ±{margin}; smallest resolvable change ±"
                    f"{format_pct(100 * smallest_resolvable(self._half_widths(frame), self.min_change))}")
        else:
            test = (f"no p-values (need >= {self.min_runs} runs per side): changes judged by "
                    f"relative change >= {format_pct(100 * self.min_change)} alone")
        return [
            f"pyfxprof diff — {sides[0]} vs {sides[1]} · by {view}",
            f"total: {label_c} {format_ns(totals['median_control'])} → {label_t} "
            f"{format_ns(totals['median_test'])} median ({_signed_pct(totals['rel_change'])}, "
            f"{_interval_text(totals)}): {_VERDICTS[totals['change']].format(margin=margin)}",
            f"rows: {len(frame)} — {summary}",
            f"significance: {test}",
            *filter(None, [numeric_mode_difference(self.control.meta, self.test.meta,
                                                   self.labels)]),
        ]

    def _design_text(self) -> str:
        """The design and its test in words (the header's significance line)."""
        design = self._judged_design()
        noise = design.noise
        kind = "unmeasured" if noise is not None and not noise.measured else design.kind
        return _DESIGN_WORDS[kind].format(
            blocks=len(np.unique(self.groups[0][self.groups[0] >= 0])),
            sessions=" vs ".join(str(len(np.unique(g))) for g in self.groups),
            shift=_signed_pct(noise.relative_shift) if noise else "",
            spread=format_pct(100 * noise.spread) if noise else "")

    @staticmethod
    def _half_widths(frame: pd.DataFrame) -> np.ndarray:
        """Half the width of each row's 95% interval (fractions; NaN without one)."""
        return ((frame["ci_high"] - frame["ci_low"]) / 2.0).to_numpy(dtype=np.float64)

    def __repr__(self) -> str:
        (label_c, label_t), totals = self.labels, self.totals()
        return (f"<ProfileDiff {label_c} ({self.control.n_runs} runs) vs {label_t} "
                f"({self.test.n_runs} runs): total {_signed_pct(totals['rel_change'])}>")


def diff(control, test, labels=("control", "test"), min_change: float = 0.05,
         alpha: float = 0.05, min_runs: int = MIN_RUNS) -> ProfileDiff:
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


def _signed_pct(fraction) -> str:
    text = format_pct(100.0 * fraction)
    return f"+{text}" if fraction > 0 else text


def _signed_ns(ns) -> str:
    text = format_ns(ns)
    return f"+{text}" if ns > 0 else text


def _interval_text(row, bare: bool = False) -> str:
    """"95% interval [low, high]" of a row's relative change ("—" without one)."""
    low, high = row["ci_low"], row["ci_high"]
    if not (np.isfinite(low) and np.isfinite(high)):
        return MISSING if bare else "no interval"
    text = f"[{_signed_pct(low)}, {_signed_pct(high)}]"
    return text if bare else f"95% interval {text}"


def _p_text(p_value) -> str:
    return MISSING if np.isnan(p_value) else f"{p_value:.2g}"


def _cut(text: str) -> str:
    """Keep the tail (the node name) of a key longer than KEY_WIDTH."""
    return text if len(text) <= KEY_WIDTH else "…" + text[-(KEY_WIDTH - 1):]


def _fused_text(fused_into: str) -> str:
    """The first conv of a (group) row's "; "-joined fused_into, and how many more."""
    convs = fused_into.split("; ")
    return _cut(convs[0] if len(convs) == 1 else f"{convs[0]} (+{len(convs) - 1} more)")


def _sorted(frame: pd.DataFrame, sort_by: str) -> pd.DataFrame:
    """Rows in display order; stable, so ties keep the compare() order."""
    if sort_by == "order":
        return frame
    if sort_by == "name":
        return frame.sort_index(kind="stable")
    if sort_by in ("p_value", "q_value"):
        return frame.sort_values(sort_by, kind="stable")
    key = (lambda s: s.abs()) if sort_by in _ABS_SORT else None
    return frame.sort_values(sort_by, ascending=False, kind="stable", key=key)


def _table_columns(frame: pd.DataFrame, labels, by: str) -> list[tuple]:
    """(title, formatter(key, row), right-aligned) per table column."""
    label_c, label_t = labels
    columns = [(_TITLES[by], lambda k, r: _cut(node_label(k)), False)]
    if not (frame["counts_control"].isin([0, 1]) & frame["counts_test"].isin([0, 1])).all():
        columns += [(f"{label_c} calls", lambda k, r: f"{r['counts_control']:g}", True),
                    (f"{label_t} calls", lambda k, r: f"{r['counts_test']:g}", True)]
    columns += [
        (f"{label_c} median", lambda k, r: format_ns(r["median_control"]), True),
        (f"{label_t} median", lambda k, r: format_ns(r["median_test"]), True),
        ("Diff", lambda k, r: _signed_ns(r["diff_duration"]), True),
        ("Rel change", lambda k, r: _signed_pct(r["rel_change"]), True),
        ("95% interval", lambda k, r: _interval_text(r, bare=True), True),
        ("q", lambda k, r: _p_text(r["q_value"]), True),
        ("Change", lambda k, r: r["change"], False),
    ]
    if (frame["change"] == "fused").any():
        columns.append(("Fused into", lambda k, r: _fused_text(r["fused_into"]), False))
    if "backward_diff" in frame:
        columns += [("Bwd diff", lambda k, r: _signed_ns(r["backward_diff"]), True),
                    ("Bwd rel change", lambda k, r: _signed_pct(r["backward_rel_change"]), True)]
    return columns
