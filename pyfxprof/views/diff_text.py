"""A ProfileDiff as text and HTML: the header (labels, runs, totals, category counts, the test
used) and the rows sorted by a key; served as ``ProfileDiff.table``, ``_repr_html_`` and
``__repr__`` through the package root's ``_METHODS`` (views never import analyses at run time).

Example:
    >>> d = pyfxprof.diff("before.json", "after.json")      # doctest: +SKIP
    >>> print(diff_table(d, top=10))                        # same as d.table(top=10)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np
import pandas as pd

from ..stats.verdict_rule import adjusted_confidence, smallest_resolvable
from ..data.units import MISSING, elide, format_ns, format_pct
from ..errors import ArgumentError, whole_number
from . import report_render
from .diff_plots import node_label
from .report import sorted_rows
from .report_header import numeric_mode_difference

if TYPE_CHECKING:
    from ..data.profile import Profile
    from ..stats.row_verdicts import Design


class ProfileDiff(Protocol):
    """What these views read of an A/B result (analyses/diff.py's ProfileDiff, whose
    docstring says what each means): views sit below analyses, so they name the shape they
    render, never the class."""

    control: Profile
    test: Profile
    labels: tuple[str, str]
    min_change: float
    alpha: float
    min_runs: int
    testable: bool
    design: Design
    groups: tuple[np.ndarray, np.ndarray]

    def judged_design(self) -> Design: ...
    def changes(self, by: str = "node", depth: int | None = None) -> pd.DataFrame: ...
    def totals(self) -> dict: ...

#: Sort keys of ``ProfileDiff.table``; diff columns sort by absolute value, descending.
SORT_KEYS = ("diff_duration", "rel_change", "diff_counts", "p_value", "q_value",
             "median_control", "median_test", "name", "order")
#: Values of the ``change`` column, in the header's order.
CHANGES = ("+", "-", "=", "?", "added", "removed", "fused")
#: Longest key shown by ``ProfileDiff.table``; longer ones keep their tail.
KEY_WIDTH = 48
_ABS_SORT = ("diff_duration", "rel_change", "diff_counts")
_CHANGE_WORDS = {"+": "slower (+)", "-": "faster (-)", "=": "same (=)", "?": "unresolved (?)"}
_VERDICTS = {"+": "slower", "-": "faster", "=": "same within ±{margin}", "?": "unresolved"}
_DESIGN_WORDS = {
    "paired": "interleaved A/B, {blocks} paired blocks: each row against the block's common "
              "shift and the nodes' spread at its duration, Hodges–Lehmann estimate",
    "paired copies": "interleaved A/B, {blocks} paired blocks of {pairs} pairs of copies: each "
                     "row against the block's common shift and the nodes' spread between the "
                     "pairs at its duration, Hodges–Lehmann estimate",
    "single": "one session per side: rows tested against the session-level noise "
              "(the test session is {shift} as a whole, per-row spread ±{spread})",
    "unmeasured": "one session per side, too few rows to measure the noise between "
                  "sessions: runs inside each session are the only noise counted (a drift "
                  "between sessions can look like a change; see docs/diff.md)",
    "sessions": "{sessions} sessions: t-test over sessions per row (moderated variance)"}
_TITLES = {"node": "Node", "op": "Op type", "target": "Op", "module_type": "Module type",
           "module": "Module"}
Column = tuple[str, Callable[[Any, Any], str], bool]


def diff_table(diff: ProfileDiff, sort_by: str = "diff_duration", top: int | None = 20,
               by: str = "node", depth: int | None = None,
               width: int | str | None = "auto") -> str:
    """The comparison as aligned text: header (labels, runs, totals and their change,
    category counts, the test used), then the rows sorted by ``sort_by`` (SORT_KEYS).
    ``width`` as in Profile.table ("auto": the terminal's, when printing to one).

    >>> print(diff(control_profile, test_profile).table(top=5))   # doctest: +SKIP
    """
    view = _view(diff, sort_by, top, by, depth)
    shown_width = report_render.terminal_width() if width == "auto" else width
    return report_render.render_text(view, shown_width if not isinstance(shown_width, str)
                                     else None)


def diff_html(diff: ProfileDiff) -> str:
    """The comparison (top 20 rows by |diff|) as an HTML table, for notebooks."""
    return report_render.render_html(_view(diff, "diff_duration", 20, "node", None))


def diff_repr(diff: ProfileDiff) -> str:
    """``<ProfileDiff main (30 runs) vs pr (30 runs): total -11.8%>``."""
    (label_c, label_t), totals = diff.labels, diff.totals()
    return (f"<ProfileDiff {label_c} ({diff.control.n_runs} runs) vs {label_t} "
            f"({diff.test.n_runs} runs): total {signed_pct(totals['rel_change'])}>")


def regression_line(what: str, row: Any) -> str:
    """One regression in words: "node x: 1.00 ms → 2.00 ms (+100.0%, interval [...], q ...)"
    (the interval at the level of its view's rows, verdict_rule.adjusted_confidence)."""
    return (f"{what}: {format_ns(row['median_control'])} → {format_ns(row['median_test'])}"
            f" ({signed_pct(row['rel_change'])}, {_interval_text(row)}, "
            f"q {_p_text(row['q_value'])})")


def _view(diff: ProfileDiff, sort_by: str, top: int | None, by: str,
          depth: int | None) -> report_render.View:
    """The comparison as a report View (text and HTML render the same cells)."""
    if sort_by not in SORT_KEYS:
        raise ArgumentError(f"sort_by must be one of {list(SORT_KEYS)}, got {sort_by!r}")
    top = whole_number("top", top, minimum=1, none=True)
    frame = sorted_rows(diff.changes(by, depth), sort_by,
                        ascending=("p_value", "q_value"), by_size=_ABS_SORT)
    shown = frame if top is None else frame.iloc[:top]
    columns = _table_columns(frame, diff.labels, by)
    notes = report_render.rows_left_out(len(frame), len(shown), "rows", top)
    return report_render.View(
        header=_header(diff, frame, by, depth), titles=[c[0] for c in columns],
        right_aligned=[c[2] for c in columns],
        rows=[[fmt(key, row) for _, fmt, _ in columns] for key, row in shown.iterrows()],
        notes=notes)


def _header(diff: ProfileDiff, frame: pd.DataFrame, by: str, depth: int | None) -> list[str]:
    (label_c, label_t), totals = diff.labels, diff.totals()
    sides = [f"{label} ({prof.meta.get('model', '?')}, {prof.n_runs} runs)"
             for label, prof in zip(diff.labels, (diff.control, diff.test))]
    view = by if depth is None else f"{by} at depth {depth}"
    counts = frame["change"].value_counts()
    summary = ", ".join(f"{counts.get(c, 0)} {_CHANGE_WORDS.get(c, c)}" for c in CHANGES)
    margin = format_pct(100 * diff.min_change)
    if diff.testable:
        level = adjusted_confidence(frame["q_value"], diff.alpha)
        test = (f"{_design_text(diff)}; Benjamini–Hochberg FDR {diff.alpha:g} across rows, "
                f"intervals at {_level_text(level)} (false coverage rate {diff.alpha:g}), "
                f"margin ±{margin}; smallest resolvable change ±"
                f"{format_pct(100 * smallest_resolvable(_half_widths(frame), diff.min_change))}")
    else:
        test = (f"no p-values (need >= {diff.min_runs} runs per side): changes judged by "
                f"relative change >= {format_pct(100 * diff.min_change)} alone")
    return [
        f"pyfxprof diff — {sides[0]} vs {sides[1]} · by {view}",
        f"total: {label_c} {format_ns(totals['median_control'])} → {label_t} "
        f"{format_ns(totals['median_test'])} {_median_words(diff)} "
        f"({signed_pct(totals['rel_change'])}, "
        f"{_interval_text(totals, level=adjusted_confidence([totals['q_value']], diff.alpha))}"
        f"): {_VERDICTS[totals['change']].format(margin=margin)}",
        f"rows: {len(frame)} — {summary}",
        f"significance: {test}",
        *filter(None, [numeric_mode_difference(diff.control.meta, diff.test.meta,
                                               diff.labels), _outside_note(diff)]),
    ]


def _outside_note(diff: ProfileDiff) -> str | None:
    """The header's line when one side alone had the (Python outside the graph) row,
    dropped so that both totals are the graph's (analyses.diff.like_totals)."""
    dropped = getattr(diff, "outside_dropped", None)
    if dropped is None:
        return None
    return (f"totals: the graphs' (the rows summed): only {dropped} resolved a (Python outside "
            "the graph) row, left out so that both totals are of one kind")


def _median_words(diff: ProfileDiff) -> str:
    """What the header's two totals are: the medians of the blocks the estimate pairs (an
    interleaved comparison, ProfileDiff.totals), else of all runs."""
    return "median of block medians" if diff.design.kind == "paired" and diff.testable \
        else "median"


def _design_text(diff: ProfileDiff) -> str:
    """The design and its test in words (the header's significance line)."""
    design = diff.judged_design()
    noise = design.noise
    kind = "unmeasured" if noise is not None and not noise.measured else design.kind
    pairs = len(set(design.copies))
    if kind == "paired" and pairs > 1:
        kind = "paired copies"
    return _DESIGN_WORDS[kind].format(
        blocks=len(np.unique(diff.groups[0][diff.groups[0] >= 0])), pairs=pairs,
        sessions=" vs ".join(str(len(np.unique(g))) for g in diff.groups),
        shift=signed_pct(noise.relative_shift) if noise else "",
        spread=format_pct(100 * noise.spread) if noise else "")


def _half_widths(frame: pd.DataFrame) -> np.ndarray:
    """Half the width of each row's interval (fractions; NaN without one)."""
    return ((frame["ci_high"] - frame["ci_low"]) / 2.0).to_numpy(dtype=np.float64)


def signed_pct(fraction: float) -> str:
    """A fraction as a signed percentage: ``signed_pct(0.05)`` -> ``"+5.0%"``."""
    text = format_pct(100.0 * fraction)
    return f"+{text}" if fraction > 0 else text


def _signed_ns(ns: float) -> str:
    text = format_ns(ns)
    return f"+{text}" if ns > 0 else text


def _interval_text(row: Any, bare: bool = False, level: float | None = None) -> str:
    """"interval [low, high]" of a row's relative change ("—" without one), "95% interval
    [...]" with its ``level``."""
    low, high = row["ci_low"], row["ci_high"]
    if not (np.isfinite(low) and np.isfinite(high)):
        return MISSING if bare else "no interval"
    text = f"[{signed_pct(low)}, {signed_pct(high)}]"
    named = "interval" if level is None else f"{_level_text(level)} interval"
    return text if bare else f"{named} {text}"


def _level_text(level: float) -> str:
    """A confidence level as a percentage: 0.95 -> "95%", 0.99615 -> "99.6%"."""
    return f"{100 * level:.3g}%"


def _p_text(p_value: float) -> str:
    return MISSING if np.isnan(p_value) else f"{p_value:.2g}"


def _fused_text(fused_into: str) -> str:
    """The first conv of a (group) row's "; "-joined fused_into, and how many more."""
    convs = fused_into.split("; ")
    return elide(convs[0] if len(convs) == 1 else f"{convs[0]} (+{len(convs) - 1} more)",
                 KEY_WIDTH, keep_tail=True)


def _table_columns(frame: pd.DataFrame, labels: tuple[str, str], by: str) -> list[Column]:
    """(title, formatter(key, row), right-aligned) per table column."""
    label_c, label_t = labels
    columns: list[Column] = [
        (_TITLES[by], lambda k, r: elide(node_label(k), KEY_WIDTH, keep_tail=True), False)]
    if not (frame["counts_control"].isin([0, 1]) & frame["counts_test"].isin([0, 1])).all():
        columns += [(f"{label_c} calls", lambda k, r: f"{r['counts_control']:g}", True),
                    (f"{label_t} calls", lambda k, r: f"{r['counts_test']:g}", True)]
    columns += [
        (f"{label_c} median", lambda k, r: format_ns(r["median_control"]), True),
        (f"{label_t} median", lambda k, r: format_ns(r["median_test"]), True),
        ("Diff", lambda k, r: _signed_ns(r["diff_duration"]), True),
        ("Rel change", lambda k, r: signed_pct(r["rel_change"]), True),
        ("Interval", lambda k, r: _interval_text(r, bare=True), True),
        ("q", lambda k, r: _p_text(r["q_value"]), True),
        ("Change", lambda k, r: r["change"], False),
    ]
    if (frame["change"] == "fused").any():
        columns.append(("Fused into", lambda k, r: _fused_text(r["fused_into"]), False))
    if "backward_diff" in frame:
        columns += [("Bwd diff", lambda k, r: _signed_ns(r["backward_diff"]), True),
                    ("Bwd rel change", lambda k, r: signed_pct(r["backward_rel_change"]), True)]
    return columns
