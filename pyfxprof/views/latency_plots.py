"""Latency figures: the run-total distribution (CDF and histogram with quantiles marked), tail
attribution bars, and fixed-vs-per-item bars of a batch-size sweep (docs/latency.md).

Each function returns the matplotlib Figure (shown inline by notebooks) and also saves it when
given a path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..data.files import PathLike
from ..data.latency import QUANTILES
from ..errors import PyfxprofError
from ..data.units import time_unit
from .figures import figure_label, matplotlib_figure, save_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..data.profile import Profile
    from ..data.sweep_fit import SweepResult

_COLOURS = {"p50": "#2b7bd9", "p90": "#d9a12b", "p99": "#d9622b", "p99_9": "#a12bd9"}


def _new_figure(width: float, height: float):
    Figure, Canvas = matplotlib_figure()
    figure = Figure(figsize=(width, height), layout="constrained")
    Canvas(figure)
    return figure


def _finish(figure, path):
    if path is not None:
        save_figure(figure, path, dpi=120)
    return figure


def plot_latency(profile: Profile, path: PathLike | None = None) -> Figure:
    """Empirical CDF (left) and histogram (right) of the run totals, p50/p90/p99/p99.9
    marked; preempted runs drawn apart when measured.

    >>> fig = plot_latency(prof, "latency.png")  # doctest: +SKIP
    """
    if profile.n_runs == 0:
        raise PyfxprofError("nothing to plot: the profile has no runs")
    totals = np.sort(profile.run_totals)
    unit, scale = time_unit(float(totals[-1]))
    summary = profile.latency()
    figure = _new_figure(10.0, 3.8)
    cdf, hist = figure.subplots(1, 2)
    cdf.step(totals / scale, np.arange(1, len(totals) + 1) / len(totals), where="post",
             color="#333333")
    noise = profile.noise()
    if noise is not None:
        preempted = noise["preempted"].to_numpy()
        hist.hist([profile.run_totals[~preempted] / scale, profile.run_totals[preempted] / scale],
                  bins=min(50, max(10, profile.n_runs // 5)), stacked=True,
                  color=["#999999", "#d92b2b"], label=["runs", "preempted runs"])
    else:
        hist.hist(totals / scale, bins=min(50, max(10, profile.n_runs // 5)), color="#999999",
                  label="runs")
    for name, _ in QUANTILES:
        value = getattr(summary, name) / scale
        for axes in (cdf, hist):
            axes.axvline(value, color=_COLOURS[name], linestyle="--", linewidth=1,
                         label=f"{name.replace('_', '.')} {value:.3g} {unit}")
    cdf.set_xlabel(f"run total ({unit})")
    cdf.set_ylabel("share of runs at or below")
    hist.set_xlabel(f"run total ({unit})")
    hist.set_ylabel("runs")
    hist.legend(fontsize=7)
    cdf.grid(alpha=0.3)
    warned = " — too few runs for p99" if any("p99 " in w for w in summary.warnings) else ""
    figure.suptitle(f"{profile.meta.get('model', '?')}: {profile.n_runs} runs{warned}")
    return _finish(figure, path)


def plot_tail(profile: Profile, path: PathLike | None = None, quantile: float = 0.99,
              top: int = 15) -> Figure:
    """Horizontal bars of each node's excess in the tail runs (the rows of Profile.tail),
    labelled with its share.

    >>> fig = plot_tail(prof, "tail.png", quantile=0.9)  # doctest: +SKIP
    """
    frame = profile.tail(quantile).head(top)
    unit, scale = time_unit(float(np.nanmax(np.abs(frame["excess"]))) if len(frame) else 0.0)
    figure = _new_figure(9.0, 1.6 + 0.32 * len(frame))
    axes = figure.add_subplot()
    positions = np.arange(len(frame))
    axes.barh(positions, frame["excess"] / scale, color="#d9622b")
    axes.set_yticks(positions, [figure_label(n) for n in frame["name"]], fontsize=8)
    axes.invert_yaxis()
    for y, (excess, share) in enumerate(zip(frame["excess"] / scale, frame["share"])):
        axes.annotate(f" {100 * share:.1f}%", (max(excess, 0), y), va="center", fontsize=7)
    axes.set_xlabel(f"excess in the runs at or above q={quantile} over the median ({unit})")
    axes.grid(axis="x", alpha=0.3)
    axes.set_title(f"which nodes make the slow runs slow: {frame.attrs.get('tail_runs')} tail "
                   f"runs of {frame.attrs.get('runs')}")
    return _finish(figure, path)


def plot_sweep(result: SweepResult, path: PathLike | None = None, top: int = 15) -> Figure:
    """Stacked bars per node of its fixed cost and per-item cost at size 1 (a sweep's
    table), nodes slowest at the largest size first.

    >>> fig = plot_sweep(pyfxprof.sweep(model, make_inputs), "sweep.png")  # doctest: +SKIP
    """
    frame = result.table().iloc[1:].head(top)
    fixed = frame["fixed_ns"].clip(lower=0).to_numpy()
    per_item = frame["per_item_ns"].clip(lower=0).to_numpy()
    unit, scale = time_unit(float((fixed + per_item).max()) if len(frame) else 0.0)
    figure = _new_figure(9.0, 1.6 + 0.32 * len(frame))
    axes = figure.add_subplot()
    positions = np.arange(len(frame))
    axes.barh(positions, fixed / scale, color="#2b7bd9", label="fixed (per call)")
    axes.barh(positions, per_item / scale, left=fixed / scale, color="#d9622b",
              label="per item (x1)")
    labels = [figure_label(n) + (" *" if bound else "")
              for n, bound in zip(frame["name"], frame["overhead_bound"])]
    axes.set_yticks(positions, labels, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel(f"fitted time at batch size 1 ({unit}); * overhead-bound")
    axes.legend(fontsize=8)
    axes.grid(axis="x", alpha=0.3)
    axes.set_title(f"fixed vs per-item cost over sizes {', '.join(map(str, result.sizes))}")
    return _finish(figure, path)
