"""The roofline plot (``prof.plot(path, kind="roofline")``): log-log FLOP/s over arithmetic
intensity, the measured roofs drawn, nodes as points sized by their time, the slowest
labelled (matplotlib)."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import numpy as np

from ..data.files import PathLike
from ..data.profile import Profile
from .roofline_text import peaks_text, profile_roofline
from ..data.units import elide, format_ns
from .figures import MAX_LABEL, matplotlib_figure, save_figure
from .label_placement import place_labels
from .safe_text import figure_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Colour of each bound's points.
BOUND_COLOURS = {"compute": "#d9622b", "memory": "#2b7bd9", "overhead": "#888888"}
#: Largest point area (points²): the slowest node's.
MAX_AREA = 900.0
#: Characters per line of the title's peaks.
TITLE_WIDTH = 110


def _roofs(axes, peaks: dict, low: float, high: float) -> None:
    """The bandwidth slope and one flat roof per measured GEMM dtype, from `low` to `high`
    FLOP/byte, each labelled."""
    bandwidth = float(peaks["bandwidth"])
    xs = np.geomspace(low, high, 200)
    top = max(float(rate) for rate in peaks["flops"].values() if rate)
    axes.plot(xs, np.minimum(xs * bandwidth, top), color="#333333", linewidth=1.2)
    for name, rate in peaks["flops"].items():
        if not rate:
            continue
        ridge = float(rate) / bandwidth
        axes.plot([max(ridge, low), high], [rate, rate], color="#333333", linewidth=1.0,
                  linestyle="-" if rate == top else "--")
        axes.annotate(f"{name} GEMM {float(rate) / 1e9:.3g} GFLOP/s", (high, float(rate)),
                      xytext=(-2, 2), textcoords="offset points", ha="right", va="bottom",
                      fontsize=8, backgroundcolor="#ffffffcc")
    axes.annotate(f"triad {bandwidth / 1e9:.3g} GB/s", (low, low * bandwidth), fontsize=8,
                  xytext=(2, 2), textcoords="offset points", va="bottom",
                  backgroundcolor="#ffffffcc")


def plot_roofline(profile: Profile, path: PathLike | None = None, top: int = 10) -> Figure:
    """The roofline of `profile` (its Profile.roofline rows with FLOPs): achieved FLOP/s over
    FLOP per byte on log-log axes, the measured roofs (triad bandwidth slope, one GEMM roof
    per dtype the nodes ran in), each node a point of area proportional to its median time, coloured by its
    bound, the `top` slowest labelled; saved to `path` when given.

    >>> fig = plot_roofline(prof, "roofline.png")  # doctest: +SKIP
    """
    frame = profile_roofline(profile)
    peaks = frame.attrs["peaks"]
    drawn = frame[(frame["flops"] > 0) & (frame["bytes"] > 0)
                  & np.isfinite(frame["flops_per_s"])].reset_index(drop=True)
    Figure, FigureCanvasAgg = matplotlib_figure()
    figure = Figure(figsize=(9.0, 6.0), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_xscale("log")
    axes.set_yscale("log")
    ridge = max(float(r) for r in peaks["flops"].values() if r) / float(peaks["bandwidth"])
    low = min([ridge / 100.0] + drawn["intensity"].tolist()) / 2.0
    high = max([ridge * 10.0] + drawn["intensity"].tolist()) * 2.0
    used = set(drawn["dtype"]) & set(peaks["flops"])  # the roofs of the dtypes the nodes ran
    peaks = {**peaks, "flops": {name: rate for name, rate in peaks["flops"].items()
                                if name in used or not used}}
    _roofs(axes, peaks, low, high)
    _points(axes, drawn)
    axes.set_xlabel("arithmetic intensity (FLOP per byte moved, bytes a lower bound)")
    axes.set_ylabel("achieved FLOP/s (FLOPs / median time)")
    axes.grid(which="major", alpha=0.3)
    left_out = len(frame) - len(drawn)
    axes.set_title(figure_text(
        f"{profile.meta.get('model', '?')} roofline — {len(drawn)} nodes"
        + (f" ({left_out} without FLOPs not drawn)" if left_out else ""))
        + "\n" + textwrap.fill(figure_text(peaks_text(peaks)), TITLE_WIDTH), fontsize=9)
    _labels(figure, axes, drawn, top)
    if path is not None:
        save_figure(figure, path, dpi=120)
    return figure


def _points(axes, drawn) -> None:
    """The nodes as points (area by median time, colour by bound)."""
    if drawn.empty:
        return
    medians = drawn["median_ns"].to_numpy(dtype=np.float64)
    areas = 12.0 + MAX_AREA * medians / np.nanmax(medians)
    for bound, colour in BOUND_COLOURS.items():
        chosen = (drawn["bound"] == bound).to_numpy()
        if chosen.any():
            axes.scatter(drawn["intensity"][chosen], drawn["flops_per_s"][chosen],
                         s=areas[chosen], c=colour, alpha=0.55, edgecolors="#222222",
                         linewidths=0.5, label=f"{bound}-bound")
    axes.legend(loc="lower right", fontsize=8, title="area: median time", title_fontsize=8)


def _labels(figure, axes, drawn, top: int) -> None:
    """The `top` slowest nodes labelled with their name and median, apart from one another
    and from the roofs' labels (views.label_placement), once the layout is final."""
    if drawn.empty:
        return
    figure.canvas.draw()  # the constrained layout settles the axes; then keep it
    figure.set_layout_engine("none")
    axes.set_autoscale_on(False)
    medians = drawn["median_ns"].to_numpy(dtype=np.float64)
    rows = drawn.iloc[np.argsort(-medians, kind="stable")[:top]].itertuples()
    place_labels(axes, [((row.intensity, row.flops_per_s), figure_text(
        f"{elide(str(row.name), MAX_LABEL)} ({format_ns(row.median_ns)})")) for row in rows],
        fontsize=7)
