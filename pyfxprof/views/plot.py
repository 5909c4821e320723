"""A bar chart of the slowest nodes: median per run with IQR (p25-p75) error bars (matplotlib)."""

from __future__ import annotations

import numpy as np

from ..errors import PyfxprofError
from .figures import MAX_LABEL, matplotlib_figure, save_figure, time_unit
from ..data.profile import Profile

def top_nodes(profile: Profile, top: int = 20) -> dict:
    """The ``top`` nodes by total: labels, median, p25 and p75 (ns), slowest first.

    >>> top_nodes(prof, top=3)["labels"]  # doctest: +SKIP
    ['layer4_0_conv2', 'layer3_0_conv2', 'conv1']
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be a positive int, got {top!r}")
    if profile.n_runs == 0 or profile.n_nodes == 0:
        raise PyfxprofError("nothing to plot: the profile has no runs or no nodes")
    totals = profile.samples.sum(axis=0)
    order = np.argsort(-totals, kind="stable")[:top]
    p25, median, p75 = np.percentile(profile.samples[:, order], (25, 50, 75), axis=0)
    names = profile.nodes["name"].to_numpy()[order].tolist()
    labels = [n if len(n) <= MAX_LABEL else n[:MAX_LABEL - 1] + "…" for n in map(str, names)]
    return {"labels": labels, "median": median, "p25": p25, "p75": p75}


def plot(profile: Profile, path, top: int = 20):
    """Save a horizontal bar chart of the ``top`` nodes by total time to ``path``; return it.

    Bars are the median time per run, error bars the interquartile range (p25 to p75); the
    slowest node is at the top. The format follows the extension (.png, .svg, .pdf).

    >>> fig = plot(prof, "top_nodes.png", top=20)  # doctest: +SKIP
    """
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
    axes.set_ylabel("node (top by total time)")
    axes.grid(axis="x", alpha=0.3)
    meta = profile.meta
    axes.set_title(f"{meta.get('model', '?')} on {meta.get('device', '?')} — top {count} of "
                   f"{profile.n_nodes} nodes by total, {profile.n_runs} runs")
    save_figure(figure, path, dpi=120)
    return figure
