"""Tail attribution: which nodes make the slow runs slow, and which carry the run-to-run variance.

For a quantile q, the *tail runs* are the runs whose total is at or above the q-quantile of the
run totals. Per node: ``median`` over all runs, ``tail`` = median over the tail runs,
``excess`` = tail - median and ``share`` = excess / the summed excess of every row. One extra
row, BETWEEN_NODES, holds the run time outside every node (run total minus the node sum), so the
shares add up to 100%. ``var_share`` is each row's covariance with the run total divided by the
variance of the total (these too add up to 100%). See docs/latency.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ArgumentError, fraction

#: Name of the row for time between nodes (run total minus the sum of the node samples).
BETWEEN_NODES = "(between nodes)"
SORT_KEYS = ("excess", "var_share")


def tail_runs(run_totals, quantile: float) -> np.ndarray:
    """Boolean mask of the runs whose total is >= the ``quantile`` of the totals.

    >>> tail_runs([10, 50, 20, 40], 0.9).tolist()
    [False, True, False, False]
    """
    quantile = fraction("quantile", quantile)
    totals = np.asarray(run_totals, dtype=np.float64)
    if totals.size == 0:
        raise ArgumentError("no runs: tail attribution needs at least one run")
    return totals >= np.quantile(totals, quantile)


def _with_between(samples: np.ndarray, run_totals: np.ndarray) -> np.ndarray:
    """(runs, nodes + 1) float: the node samples plus the time between nodes per run."""
    values = samples.astype(np.float64)
    between = run_totals.astype(np.float64) - values.sum(axis=1)
    return np.column_stack([values, between])


def variance_shares(values: np.ndarray) -> np.ndarray:
    """cov(column, row sum) / var(row sum) per column of a (runs, parts) array; NaN when the
    sum does not vary (or fewer than 2 runs). The shares add up to 1.

    >>> variance_shares(np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 5.0]])).tolist()
    [1.0, 0.0]
    """
    if values.shape[0] < 2:
        return np.full(values.shape[1], np.nan)
    total = values.sum(axis=1)
    centred = values - values.mean(axis=0)
    total_centred = total - total.mean()
    variance = float(total_centred @ total_centred)
    if variance == 0.0:
        return np.full(values.shape[1], np.nan)
    return (centred.T @ total_centred) / variance


def tail_attribution(names, samples, run_totals, quantile: float = 0.99,
                     sort_by: str = "excess") -> pd.DataFrame:
    """One row per node plus BETWEEN_NODES: median, tail, excess (ns), share and var_share
    (fractions of 1), sorted by ``sort_by`` ("excess" or "var_share") descending.

    >>> frame = tail_attribution(["a", "b"], np.array([[10, 5], [10, 5], [40, 5]]),
    ...                          np.array([16, 16, 46]), quantile=0.9)
    >>> frame[["name", "median", "tail", "excess", "share"]].values.tolist()
    [['a', 10.0, 40.0, 30.0, 1.0], ['b', 5.0, 5.0, 0.0, 0.0], ['(between nodes)', 1.0, 1.0, 0.0, 0.0]]
    """
    if sort_by not in SORT_KEYS:
        raise ArgumentError(f"sort_by must be one of {list(SORT_KEYS)}, got {sort_by!r}")
    samples = np.asarray(samples)
    totals = np.asarray(run_totals)
    in_tail = tail_runs(totals, quantile)
    values = _with_between(samples, totals)
    median = np.median(values, axis=0)
    tail = np.median(values[in_tail], axis=0)
    excess = tail - median
    summed = excess.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        share = excess / summed if summed != 0 else np.full(len(excess), np.nan)
    frame = pd.DataFrame({"name": list(names) + [BETWEEN_NODES], "median": median,
                          "tail": tail, "excess": excess, "share": share,
                          "var_share": variance_shares(values)})
    frame.attrs.update(quantile=quantile, tail_runs=int(in_tail.sum()), runs=len(totals))
    return frame.sort_values(sort_by, ascending=False, kind="stable").reset_index(drop=True)
