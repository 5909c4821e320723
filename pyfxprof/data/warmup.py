"""The warm-up report of a Profile's runs (the detection itself is stats/warmup.py): how many
timed runs were still warming up, what they cost, whether the steady runs drift, and the nodes
with first-call costs. See docs/latency.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .. import served_methods
from ..stats.warmup import drift, ignored_runs, runs_before_steady, warmup_runs


@served_methods
@dataclass
class WarmupReport:
    """Warm-up of the run totals (ns).

    ``runs``: timed runs still warming up (0: steady from the first timed run);
    ``steady_ns``: median of the runs after them; ``excess_ns``: what the warm-up runs cost
    beyond steady state, summed; ``drift``: Spearman's rho of the steady runs against their
    index when significant (p < 0.01), else None; ``warmup``: untimed runs that preceded
    (None: unknown); ``needed``: warm-up runs this model needs (None: unknown);
    ``warmup_runs_slow``: of the untimed warm-up runs, how many were still slow (None when
    their times were not kept, or when half of them or more were preempted, which leaves too
    few to tell); ``warmup_runs_preempted``: how many untimed warm-up runs were preempted.
    ``str()`` is one line (views.latency_text.render_warmup).
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS; tests/test_typing.py
        # checks each declaration against the serving function's signature
        def __str__(self) -> str: ...

    runs: int
    steady_ns: int
    excess_ns: int
    drift: float | None
    warmup: int | None
    needed: int | None
    warmup_runs_slow: int | None = None
    warmup_runs_preempted: int = 0

    def as_dict(self) -> dict:
        """The fields as a plain dict."""
        return asdict(self)


def warmup_report(run_totals, warmup: int | None = None, warmup_totals=None,
                  preempted=None, timed_walls=None) -> WarmupReport:
    """The WarmupReport of ``run_totals``; ``warmup`` untimed runs preceded them, whose
    totals (``warmup_totals``, ns, None for a preempted one; optional) tell how many of them
    were needed. Runs marked in ``preempted`` (bool per run) are left out of the detection
    while they are fewer than half of the runs. ``timed_walls`` (wall ns of each timed run,
    measured like ``warmup_totals``) stand for the timed runs after the untimed ones, so both
    parts of that sequence include the same per-call costs outside the run's marks.

    >>> r = warmup_report([900, 800] + [100] * 10, warmup=1)
    >>> r.runs, r.steady_ns, r.excess_ns, r.needed
    (2, 100, 1500, 3)
    >>> warmup_report([900, 5000, 800] + [100] * 10, preempted=[0, 1, 0] + [0] * 10).runs
    3
    >>> warmup_report([900, 800] + [100] * 10, preempted=[1] * 12).runs  # all preempted: all used
    2
    >>> str(warmup_report([100] * 10, warmup=4, warmup_totals=[900, None, None, 101]))
    'warm-up: steady from the first timed run (100 ns); 2 of the 4 untimed warm-up runs were preempted, too many to tell how many were slow'
    """
    totals = np.asarray(run_totals, dtype=np.int64).ravel()
    ignore = ignored_runs(preempted, len(totals))
    runs = runs_before_steady(totals, ignore)
    steady = totals[runs:][~ignore[runs:]]
    median = int(np.median(steady)) if steady.size else 0
    excess = int(np.clip(totals[:runs][~ignore[:runs]] - median, 0, None).sum())
    slow, missing = None, np.zeros(0, dtype=bool)
    if warmup_totals is not None and len(warmup_totals):
        untimed = np.array([0 if t is None else t for t in warmup_totals], dtype=np.int64)
        missing = np.array([t is None for t in warmup_totals], dtype=bool)
        timed = totals if timed_walls is None else np.asarray(timed_walls, dtype=np.int64)
        if missing.sum() < len(untimed) / 2:  # else too few kept to tell: unknown
            slow = min(runs_before_steady(np.concatenate([untimed, timed]),
                                           np.concatenate([missing, ignore])), len(untimed))
    if runs:
        needed = None if warmup is None else warmup + runs
    else:
        needed = slow
    return WarmupReport(runs, median, excess, drift(steady.astype(np.float64)), warmup,
                        needed, slow, int(missing.sum()))


def node_warmup(names, samples, preempted=None) -> pd.DataFrame:
    """Nodes whose first runs are slower (first-call costs): name, warmup_runs, warmup_ns (median
    over the warm-up runs), steady_ns (median after the warm-up runs), excess_ns (summed); largest excess
    first. Runs marked in ``preempted`` are left out of the detection.

    >>> samples = np.array([[50, 10]] + [[5, 10]] * 7)
    >>> node_warmup(["lazy", "steady"], samples).values.tolist()
    [['lazy', 1, 50, 5, 45]]
    """
    samples = np.asarray(samples, dtype=np.int64)
    kept = np.flatnonzero(~ignored_runs(preempted, samples.shape[0]))
    clean = samples[kept]
    found = warmup_runs(clean) if len(kept) else np.zeros(samples.shape[1], np.int64)
    names, rows = list(names), []
    for column in np.flatnonzero(found):
        k = found[column]
        steady = int(np.median(clean[k:, column]))
        excess = int(np.clip(clean[:k, column] - steady, 0, None).sum())
        rows.append((names[column], int(kept[k - 1]) + 1, int(np.median(clean[:k, column])),
                     steady, excess))
    frame = pd.DataFrame(rows, columns=["name", "warmup_runs", "warmup_ns", "steady_ns",
                                        "excess_ns"])
    return frame.sort_values("excess_ns", ascending=False, kind="stable").reset_index(drop=True)
