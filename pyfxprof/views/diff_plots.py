"""Bar charts of a :meth:`ProfileDiff.changes` frame: control and test side by side, and their
difference (red: test higher, green: test lower, grey: a duration change that is not
significant, ``change`` "=" or "?"; every bar grey, and the title says so, when too few runs allowed
no significance test). Labels name a node once: its module path when the node is that
module's call. matplotlib is imported lazily and drawn with its Agg canvas, so
no global backend is changed and no display is needed.

Example:
    >>> df = diff("before.json", "after.json").changes()      # doctest: +SKIP
    >>> visualize_duration_diff(df, "duration.png", top=15)    # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.units import time_unit
from .figures import figure_label, matplotlib_figure, save_figure

from ..errors import ArgumentError, whole_number


def _check(df: pd.DataFrame, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ArgumentError(f"df must come from ProfileDiff.changes(); missing columns {missing}")


def _top_rows(df: pd.DataFrame, column: str, top: int) -> pd.DataFrame:
    """The ``top`` rows with the largest non-zero |column|, largest first (ties: df order)."""
    top = whole_number("top", top, minimum=1)
    changed = df[df[column].fillna(0) != 0]
    return changed.sort_values(column, key=lambda s: s.abs(), ascending=False,
                               kind="stable").iloc[:top]


def node_label(key) -> str:
    """A changes() key shown once: "(root)" for "", and a "module/node" key whose node is that
    module's call (FX names it after the path: dots as "_", a leading "_" before a digit) as
    the module path alone.

    >>> node_label("layer1.0.conv1/layer1_0_conv1"), node_label("0/_0"), node_label("a/add")
    ('layer1.0.conv1', '0', 'a/add')
    """
    text = str(key) or "(root)"
    module, _, node = text.rpartition("/")
    if module and module.replace(".", "_").lstrip("_") == node.lstrip("_"):
        return module
    return text


def _bar_figure(rows: pd.DataFrame, columns: tuple[str, str, str], labels, quantity: str,
                unit: str, scale: float, title: str, changed: np.ndarray):
    """Grouped horizontal bars (control, test) of ``quantity`` on the left, the difference on
    the right (grey where not ``changed``); values are divided by ``scale`` to be in ``unit``."""
    Figure, FigureCanvasAgg = matplotlib_figure()
    figure = Figure(figsize=(12, 1.8 + 0.35 * max(len(rows), 1)), layout="constrained")
    FigureCanvasAgg(figure)
    figure.suptitle(title)
    if rows.empty:
        figure.text(0.5, 0.5, "no differences", ha="center", va="center")
        return figure
    sides, difference = figure.subplots(1, 2, sharey=True, width_ratios=(2, 1))
    y, height = np.arange(len(rows)), 0.4
    for offset, column, label in ((-height / 2, columns[0], labels[0]),
                                  (height / 2, columns[1], labels[1])):
        sides.barh(y + offset, rows[column].to_numpy() / scale, height, label=label)
    sides.set_yticks(y, [figure_label(node_label(key), keep_tail=True) for key in rows.index])
    sides.invert_yaxis()
    sides.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2, frameon=False)
    sides.set_xlabel(f"{quantity} ({unit})")
    delta = rows[columns[2]].to_numpy() / scale
    colors = np.where(delta > 0, "tab:red", "tab:green")
    difference.barh(y, delta, color=np.where(changed, colors, "tab:gray"))
    difference.axvline(0.0, color="black", linewidth=0.8)
    difference.set_xlabel(f"{labels[1]} − {labels[0]} ({unit})")
    return figure


def visualize_duration_diff(df: pd.DataFrame, path=None, top: int = 20):
    """Median time per run of the ``top`` rows with the largest |diff_duration|.

    df: a ProfileDiff.changes() frame (labels from ``df.attrs["labels"]``).
    path: where to save the image (format from the suffix, e.g. .png, .svg); None: don't save.
    Returns the matplotlib Figure.

    >>> fig = visualize_duration_diff(d.changes(by="module", depth=2), "dur.png")  # doctest: +SKIP
    """
    columns = ("median_control", "median_test", "diff_duration")
    _check(df, columns + ("change",))
    rows = _top_rows(df, "diff_duration", top)
    values = np.abs(rows[list(columns)].to_numpy(dtype=np.float64))
    unit, scale = time_unit(float(np.nanmax(values)) if values.size else 0.0)
    labels = df.attrs.get("labels", ("control", "test"))
    if df.attrs.get("testable", True):
        title, changed = (f"Largest duration changes (top {top}; grey: not significant)",
                          (~rows["change"].isin(["=", "?"])).to_numpy())
    else:
        title = (f"Largest duration changes (top {top}) — no significance test: fewer than "
                 f"{df.attrs.get('min_runs', 5)} runs per side, so every bar is grey")
        changed = np.zeros(len(rows), dtype=bool)
    figure = _bar_figure(rows, columns, labels, "median time per run", unit, scale, title,
                         changed)
    if path is not None:
        save_figure(figure, path)
    return figure


def visualize_counts_diff(df: pd.DataFrame, path=None, top: int = 20):
    """Calls per run of the ``top`` rows with the largest |diff_counts| (e.g. ops of traces).

    Same arguments and result as :func:`visualize_duration_diff`.

    >>> fig = visualize_counts_diff(d.changes(by="target"), "counts.png")  # doctest: +SKIP
    """
    columns = ("counts_control", "counts_test", "diff_counts")
    _check(df, columns)
    rows = _top_rows(df, "diff_counts", top)
    labels = df.attrs.get("labels", ("control", "test"))
    figure = _bar_figure(rows, columns, labels, "calls", "per run", 1.0,
                         f"Largest call-count changes (top {top})", np.ones(len(rows), bool))
    if path is not None:
        save_figure(figure, path)
    return figure
