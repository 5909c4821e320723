"""Warm-up detection: are the first runs slower than the rest, and for how many runs?

A change point by MSER (White's marginal standard error rule, as used to truncate the start-up
of simulations) on the runs' ranks: the cut d (at most half the runs) minimising the variance of
the mean of the ranks after it. A run before the cut is slow when it exceeds the steady median
(of the runs after the cut) by more than ``max(3 x robust sigma, 5%)``; the warm-up ends where
(slow runs - steady runs) counted from the start peaks last, so a lone spike just after it does
not lengthen it, and MSER cutting into slightly rising steady runs does not hide a short slow
start. It is kept only when the median of its runs is slow (a lone slow first run must also be
slower than every later run). A Spearman test on the steady
runs reports a remaining trend (drift). Works column-wise, so it also finds per-node first-call
costs. ``settled`` asks the same of runs as they come: profile()'s ``warmup="auto"`` stops its
warm-up runs once they have settled. The report a Profile shows is data/warmup.py.
See docs/latency.md.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .ranks import average_ranks, spearman

SIGMAS = 3.0            # warm-up runs exceed the steady median by this many robust sigmas
MIN_RELATIVE = 0.05     # ... and by at least this fraction of it
LONE_RELATIVE = 0.25    # a lone slow first run: at least this fraction (the first timed run
                        # after a reset is routinely a few % slower, and a VM adds as much)
DRIFT_P = 0.01          # significance of the trend test on the steady runs
MIN_RUNS = 4            # fewer runs: no detection
SETTLED_RUNS = 3        # settled: the latest this many runs are steady


def _mser_cut(values: np.ndarray) -> np.ndarray:
    """Per column of (runs, columns) float, the MSER cut d in 0..runs//2, on ranks (so one
    huge late spike weighs no more than the slowest warm-up run)."""
    n = values.shape[0]
    ranks = average_ranks(values)
    centred = ranks - ranks.mean(axis=0)
    suffix1 = np.cumsum(centred[::-1], axis=0)[::-1]          # sum of x[d:]
    suffix2 = np.cumsum((centred ** 2)[::-1], axis=0)[::-1]
    cuts = np.arange(n // 2 + 1)
    remaining = (n - cuts)[:, None].astype(np.float64)
    sse = suffix2[cuts] - suffix1[cuts] ** 2 / remaining
    return np.argmin(sse / remaining ** 2, axis=0)


def _threshold(steady: np.ndarray) -> tuple[float, float]:
    """(median, excess a warm-up run must exceed) of one column's steady runs."""
    median = float(np.median(steady))
    sigma = 1.4826 * float(np.median(np.abs(steady - median)))
    return median, max(SIGMAS * sigma, MIN_RELATIVE * abs(median), 1.0)


def warmup_runs(values) -> np.ndarray:
    """Warm-up runs at the start of each column of ``values`` (runs,) or (runs, columns).

    >>> warmup_runs([900, 800, 700] + [100, 101, 99, 100, 102, 98, 100, 101, 99])
    array([3])
    >>> warmup_runs(np.array([[100, 5], [100, 6], [101, 5], [99, 5], [100, 6], [100, 5]]))
    array([0, 0])
    """
    array = np.asarray(values, dtype=np.float64)
    array = array[:, None] if array.ndim == 1 else array
    if not np.isfinite(array).all():
        raise ArgumentError("run times must be finite (NaN or inf found): drop or fix those runs")
    found = np.zeros(array.shape[1], dtype=np.int64)
    if array.shape[0] < MIN_RUNS:
        return found
    for column, cut in enumerate(_mser_cut(array)):
        if cut == 0:
            continue
        median, threshold = _threshold(array[cut:, column])
        end = _warmup_end(array[:cut, column] > median + threshold)
        if end and np.median(array[:end, column]) > median + threshold:
            found[column] = end
        if found[column] == 1 and not _lone_run_stands_out(array[:, column], median):
            found[column] = 0
    return found


def settled(values, latest: int = SETTLED_RUNS) -> bool:
    """Whether runs taking ``values`` (in order) have settled: the ``latest`` runs are within
    the noise of the steady runs before them (those after the warm-up warmup_runs finds in
    all the runs; at least one): each within the threshold a warm-up run must exceed
    (max(3 robust sigma, 5%)) of their median, below it too, since runs still getting faster
    have not settled. Runs still slow from the start look steady (nothing faster came yet):
    only a minimum of runs guards against that.

    >>> settled([900, 500, 300, 100, 100, 101, 99])
    True
    >>> settled([900, 800, 700, 600, 101]), settled([500, 400, 300, 100]), settled([9, 1, 1])
    (False, False, False)
    """
    array = np.asarray(values, dtype=np.float64)
    earlier = array[int(warmup_runs(array)[0]):len(array) - latest]
    if len(array) < max(MIN_RUNS, latest + 1) or len(earlier) == 0:
        return False
    median, threshold = _threshold(earlier)
    return bool(np.all(np.abs(array[-latest:] - median) <= threshold))


def _lone_run_stands_out(values: np.ndarray, steady_median: float) -> bool:
    """One slow run counts only when slower than every later run, and by LONE_RELATIVE."""
    first = values[0]
    return first > values[1:].max() and first > steady_median * (1 + LONE_RELATIVE)


def _warmup_end(slow: np.ndarray) -> int:
    """Where the mostly-slow start ends: the last maximum of (slow runs - steady runs) so far,
    so a lone spike after the warm-up does not extend it."""
    score = np.cumsum(np.where(slow, 1, -1))
    if score.max() <= 0:
        return 0
    return len(score) - int(np.argmax(score[::-1]))


def drift(steady: np.ndarray) -> float | None:
    """Spearman's rho of `steady` runs against their order when significant (p < DRIFT_P),
    else None (also with fewer than MIN_RUNS runs or none varying).

    >>> drift(np.arange(20.0)), drift(np.ones(20))
    (1.0, None)
    """
    if len(steady) < MIN_RUNS or np.ptp(steady) == 0:
        return None
    rho, p_value = spearman(np.arange(len(steady)), steady)
    return float(rho) if p_value < DRIFT_P else None


def ignored_runs(preempted, runs: int) -> np.ndarray:
    """Runs to leave out of the detection: the preempted ones, unless they are half of the
    runs or more (a machine that busy leaves nothing to compare with: all runs are used)."""
    if preempted is None:
        return np.zeros(runs, dtype=bool)
    mask = np.asarray(preempted, dtype=bool)
    return mask if mask.sum() < runs / 2 else np.zeros(runs, dtype=bool)


def runs_before_steady(values: np.ndarray, ignore: np.ndarray) -> int:
    """Warm-up runs of ``values`` (1-D), detected on the runs not ignored (preempted runs:
    the machine's spikes, not the model's) and counted in all runs."""
    kept = np.flatnonzero(~ignore)
    found = int(warmup_runs(values[kept])[0]) if len(kept) else 0
    return int(kept[found - 1]) + 1 if found else 0
