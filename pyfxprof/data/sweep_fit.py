"""Batch-size scaling: per node, a robust line time = fixed + per_item x size over a sweep.

The fit is Theil–Sen (stats/line_fit.py: the median of the slopes between every pair of sizes;
the intercept is the median of y - slope x) on each node's median time at each size, so a
preempted or slow run moves nothing. ``fixed_ns`` is the intercept (cost of a call whatever the batch: dispatch,
launch, Python), ``per_item_ns`` the slope. ``r2`` compares the line with the medians (1: on
the line; low: not linear in the batch size). A node is *overhead-bound* at size 1 when its
fixed cost is more than half of its fitted time at size 1. See docs/latency.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .. import served_methods

from ..errors import ArgumentError
from ..stats.line_fit import fit_rows

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .files import PathLike

#: Name of the row fitting the whole run (run totals).
TOTAL_ROW = "(run total)"


def _quietest_runs(profile):
    """``profile`` without its preempted runs, or, when they are half of the runs or more, its
    half of the runs with the least time off the CPU (stolen_ns)."""
    clean = profile.without_preempted()
    if clean.n_runs >= profile.n_runs / 2:
        return clean
    stolen = profile.noise()["stolen_ns"].to_numpy()
    return profile.select_runs(stolen <= np.median(stolen))


@served_methods
class SweepResult:
    """Profiles of one model at several batch sizes, and per-node fixed / per-item costs.

    ``profiles`` maps size -> Profile. Nodes are matched by name; nodes missing at some size
    are left out (``missing`` lists them). Preempted runs are left out of the medians; when
    they are half of the runs or more, the half of the runs least time off the CPU is used.
    ``render`` (and ``str()``) and ``plot`` are served by views.latency_text and
    views.latency_plots (pyfxprof/__init__.py's ``_METHODS``).

    >>> result = pyfxprof.sweep(model, lambda n: (torch.randn(n, 8),))  # doctest: +SKIP
    >>> print(result)  # doctest: +SKIP
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS; tests/test_typing.py
        # checks each declaration against the serving function's signature
        def plot(self, path: PathLike | None = None, top: int = 15) -> Figure: ...
        def render(self, top: int | None = 20) -> str: ...
        def __str__(self, top: int | None = 20) -> str: ...

    def __init__(self, profiles: dict):
        if len(profiles) < 2:
            raise ArgumentError("a sweep needs profiles at two sizes or more")
        self.profiles = dict(sorted(profiles.items()))
        self.sizes = list(self.profiles)
        first = next(iter(self.profiles.values()))
        common = set.intersection(*(set(p.nodes["name"]) for p in self.profiles.values()))
        self.names = [n for n in first.nodes["name"] if n in common]
        self.missing = sorted(set().union(*(set(p.nodes["name"]) for p in profiles.values()))
                              - common)

    def medians(self) -> pd.DataFrame:
        """Median ns per size (rows) for the run total and every common node (columns), over the
        runs not preempted (when half or more were, over the half of the runs that spent the
        least time off the CPU)."""
        rows = {}
        for size, profile in self.profiles.items():
            clean = _quietest_runs(profile)
            by_name = pd.Series(np.median(clean.samples, axis=0), index=clean.nodes["name"])
            rows[size] = [float(np.median(clean.run_totals))] + by_name[self.names].tolist()
        return pd.DataFrame.from_dict(rows, orient="index", columns=[TOTAL_ROW] + self.names)

    def table(self) -> pd.DataFrame:
        """One row for the run total, then one per node (slowest at the largest size first):
        name, op, target, FIT_COLUMNS (fixed_ns, per_item_ns in ns; r2; fixed_share_at_1;
        overhead_bound) and ``median_at_<size>`` (ns) for each size."""
        medians = self.medians()
        frame = fit_rows(self.sizes, medians.to_numpy())
        nodes = next(iter(self.profiles.values())).nodes.set_index("name")
        frame.insert(0, "name", medians.columns)
        frame.insert(1, "op", [""] + nodes.loc[self.names, "op"].tolist())
        frame.insert(2, "target", [""] + nodes.loc[self.names, "target"].astype(str).tolist())
        for size in self.sizes:
            frame[f"median_at_{size}"] = medians.loc[size].to_numpy()
        order = [0] + list(1 + np.argsort(-medians.iloc[-1, 1:].to_numpy(), kind="stable"))
        return frame.iloc[order].reset_index(drop=True)
