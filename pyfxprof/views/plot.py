"""Profile.plot: a bar chart of the slowest nodes (median per run with IQR error bars), or the
roofline (views.roofline_plot), by kind (matplotlib)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..data.files import PathLike
from ..data.profile import Profile
from ..errors import ArgumentError, PyfxprofError, whole_number
from .figures import figure_label, matplotlib_figure, save_figure, time_unit
from .roofline_plot import plot_roofline
from .safe_text import figure_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: The kinds of Profile.plot: the slowest nodes' bars, the measured roofline.
KINDS = ("nodes", "roofline")


def top_nodes(profile: Profile, top: int = 20) -> dict:
    """The ``top`` nodes by median time per run (what the bars draw): labels, median, p25 and
    p75 (ns), slowest first; ties keep execution order.

    >>> top_nodes(prof, top=3)["labels"]  # doctest: +SKIP
    ['layer4_0_conv2', 'layer3_0_conv2', 'conv1']
    """
    top = whole_number("top", top, minimum=1)
    if profile.n_runs == 0 or profile.n_nodes == 0:
        raise PyfxprofError("nothing to plot: the profile has no runs or no nodes")
    medians = np.median(profile.samples, axis=0)
    order = np.argsort(-medians, kind="stable")[:top]
    p25, median, p75 = np.percentile(profile.samples[:, order], (25, 50, 75), axis=0)
    names = profile.nodes["name"].to_numpy()[order].tolist()
    labels = [figure_label(name) for name in names]
    return {"labels": labels, "median": median, "p25": p25, "p75": p75}


def plot(profile: Profile, path: PathLike | None = None, top: int = 20,
         kind: str = "nodes") -> Figure:
    """A plot of the profile, of one of KINDS; saved to ``path`` when given (format from the
    extension: .png, .svg, .pdf); returns the Figure (shown inline in notebooks).

    ``kind="nodes"``: a horizontal bar chart of the ``top`` nodes by median time per run,
    sorted (slowest at the top), error bars the interquartile range (p25 to p75).
    ``kind="roofline"``: the measured roofline (views.roofline_plot), the ``top`` slowest
    nodes labelled (docs/roofline.md).

    >>> fig = plot(prof, "top_nodes.png", top=20)  # doctest: +SKIP
    >>> fig = plot(prof, "roofline.png", kind="roofline")  # doctest: +SKIP
    """
    if kind not in KINDS:
        raise ArgumentError(f"kind must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")
    if kind == "roofline":
        return plot_roofline(profile, path, top)
    data = top_nodes(profile, top)
    Figure, FigureCanvasAgg = matplotlib_figure()
    unit, scale = time_unit(float(np.nanmax(data["p75"])))
    median = data["median"] / scale
    errors = np.vstack([data["median"] - data["p25"], data["p75"] - data["median"]]) / scale
    count = len(data["labels"])
    figure = Figure(figsize=(9.0, 1.6 + 0.32 * count), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = np.arange(count)
    axes.barh(positions, median, xerr=errors, color="#d9622b", ecolor="#333333", capsize=3)
    axes.set_yticks(positions, data["labels"], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(f"median time per run ({unit}); error bars: IQR (p25–p75)")
    axes.set_ylabel("node (slowest median first)")
    axes.grid(axis="x", alpha=0.3)
    meta = profile.meta
    axes.set_title(figure_text(
        f"{meta.get('model', '?')} on {meta.get('device', '?')} — top {count} of "
        f"{profile.n_nodes} nodes by median, {profile.n_runs} runs"))
    if path is not None:
        save_figure(figure, path, dpi=120)
    return figure
