"""Vectorised per-node statistics over timed runs (numpy; no Python loop per record or run).

Every reducer works on a ``(runs, nodes)`` array of durations in ns and handles small ``n``
explicitly: no runs gives NaN everywhere, one run gives NaN for ``std`` (sample std, ddof=1).
Percentiles use numpy's default linear interpolation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import ArgumentError

class _Runs:
    """A (runs >= 1, nodes) float array with what the reducers share: one sort for every order
    statistic, percentiles by linear interpolation (numpy's default method)."""

    def __init__(self, values: np.ndarray):
        self.values = values
        self.ordered = np.sort(values, axis=0)

    def percentile(self, q: float) -> np.ndarray:
        last = self.ordered.shape[0] - 1
        position = last * q / 100.0
        low = int(np.floor(position))
        high = min(low + 1, last)
        return self.ordered[low] + (self.ordered[high] - self.ordered[low]) * (position - low)

    def std(self) -> np.ndarray:
        if self.values.shape[0] < 2:
            return np.full(self.values.shape[1], np.nan)
        return self.values.std(axis=0, ddof=1)


@dataclass(frozen=True)
class Statistic:
    """One per-node statistic: its column ``name``, report ``title``, ``unit`` ("ns", "runs"
    or "%"), one-line ``meaning`` (docs/profile.md's table) and ``reduce`` (a ``_Runs`` of at
    least one run -> one value per node; None for count and pct_total, which need no runs).
    How the report uses it: ``sort``, the header's words when rows are sorted by it (empty:
    not a sort key); ``shown``, a column by default; ``droppable``, left out (the rightmost
    first) when the table must fit the terminal."""

    name: str
    title: str
    unit: str
    meaning: str
    reduce: Callable[[_Runs], np.ndarray] | None = None
    sort: str = ""
    shown: bool = False
    droppable: bool = False


#: Every statistic of :func:`node_statistics`, in column order; the one place a statistic is
#: defined (the report's titles, number formats, sort keys, default columns and the order a
#: narrow table drops them, and docs/profile.md's table read it).
STATISTICS = (
    Statistic("count", "Runs", "runs", "number of timed runs (int)"),
    Statistic("total", "Total", "ns", "sum over runs",
              sort="total over all runs, descending (one slow run moves it)"),
    Statistic("mean", "Mean", "ns", "mean over runs", lambda r: r.values.mean(axis=0),
              sort="mean per run, descending (one slow run moves it)", shown=True,
              droppable=True),
    Statistic("median", "Median", "ns", "median over runs", lambda r: r.percentile(50),
              sort="median per run, descending", shown=True),
    Statistic("min", "Min", "ns", "fastest run", lambda r: r.ordered[0]),
    Statistic("max", "Max", "ns", "slowest run", lambda r: r.ordered[-1],
              sort="slowest run, descending"),
    Statistic("std", "Std", "ns", "sample standard deviation (ddof=1); NaN with fewer than 2 "
              "runs", _Runs.std),
    Statistic("p10", "P10", "ns", "10th percentile", lambda r: r.percentile(10)),
    Statistic("p90", "P90", "ns", "90th percentile", lambda r: r.percentile(90)),
    Statistic("p99", "P99", "ns", "99th percentile", lambda r: r.percentile(99)),
    Statistic("iqr", "IQR", "ns", "interquartile range, p75 − p25",
              lambda r: r.percentile(75) - r.percentile(25), shown=True, droppable=True),
    Statistic("pct_total", "Total %", "%", "node `total` / sum of all node totals × 100; 0 "
              "when all are 0", shown=True),
)
#: Columns of :func:`node_statistics`, in order. All are ns as float except ``count``
#: (number of runs, int) and ``pct_total`` (percent of the sum of all node totals).
STAT_COLUMNS = tuple(statistic.name for statistic in STATISTICS)
#: Column -> unit ("ns", "runs", "%") of each statistic.
STAT_UNITS = {statistic.name: statistic.unit for statistic in STATISTICS}


def _as_2d(samples) -> np.ndarray:
    array = np.asarray(samples)
    if array.ndim != 2:
        raise ArgumentError(f"samples must be 2-D (runs, nodes), got shape {array.shape}")
    if array.dtype.kind not in "iuf":
        raise ArgumentError(f"samples must be numeric, got dtype {array.dtype}")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise ArgumentError("samples must be finite (NaN or inf found): drop or fix those runs")
    return array


def node_statistics(samples) -> pd.DataFrame:
    """One row per node column of ``samples`` (runs, nodes): the columns of STAT_COLUMNS.

    >>> s = node_statistics(np.array([[10, 0], [30, 0]]))
    >>> s["count"].tolist(), s["total"].tolist(), s["median"].tolist()
    ([2, 2], [40.0, 0.0], [20.0, 0.0])
    >>> s["std"].round(3).tolist(), s["pct_total"].tolist()
    ([14.142, 0.0], [100.0, 0.0])
    """
    array = _as_2d(samples)
    runs, nodes = array.shape
    totals = array.sum(axis=0, dtype=np.float64)  # int64 overflows: 9,224 runs of 1e15 ns
    reduced = [s for s in STATISTICS if s.reduce is not None]
    if runs:
        shared = _Runs(array.astype(np.float64))
        columns = {s.name: s.reduce(shared) for s in reduced if s.reduce is not None}
    else:
        columns = {s.name: np.full(nodes, np.nan) for s in reduced}
    grand = totals.sum()
    columns.update(count=np.full(nodes, runs, dtype=np.int64), total=totals,
                   pct_total=totals / grand * 100.0 if grand != 0 else np.zeros(nodes))
    return pd.DataFrame(columns, columns=list(STAT_COLUMNS))


def cumulative_pct(pct):
    """Running sum of percentages in the given (display) order; keeps a Series' index.

    >>> cumulative_pct([50.0, 30.0, 20.0]).tolist()
    [50.0, 80.0, 100.0]
    """
    if isinstance(pct, pd.Series):
        return pct.astype(np.float64).cumsum()
    return np.cumsum(np.asarray(pct, dtype=np.float64))


def iqr(values: np.ndarray) -> float:
    """Interquartile range, p75 − p25 (numpy's linear percentiles); 0.0 for fewer than two
    values (no spread measurable).

    >>> iqr(np.array([1, 2, 3, 4, 5])), iqr(np.array([7]))
    (2.0, 0.0)
    """
    if len(values) < 2:
        return 0.0
    q25, q75 = np.percentile(values, [25, 75])
    return float(q75 - q25)


def relative_iqr(stats: pd.DataFrame) -> pd.Series:
    """IQR / median per row: NaN when both are 0, inf when only the median is 0.

    >>> relative_iqr(pd.DataFrame({"iqr": [5.0, 0.0], "median": [100.0, 0.0]})).tolist()
    [0.05, nan]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        return stats["iqr"].astype(np.float64) / stats["median"].astype(np.float64)


def noisy_mask(stats: pd.DataFrame, min_pct: float = 1.0, max_rel_iqr: float = 0.10) -> pd.Series:
    """True where a row worth >= ``min_pct`` % of the total has IQR/median > ``max_rel_iqr``.

    >>> st = pd.DataFrame({"iqr": [30.0, 1.0, 30.0], "median": [100.0, 100.0, 100.0],
    ...                    "pct_total": [60.0, 39.5, 0.5]})
    >>> noisy_mask(st).tolist()
    [True, False, False]
    """
    rel = relative_iqr(stats)
    return (stats["pct_total"] >= min_pct) & (rel > max_rel_iqr)


def group_samples(samples, keys: Sequence) -> tuple[list, np.ndarray]:
    """Sum per-run samples of nodes sharing a key; groups in order of first appearance.

    ``keys`` holds one hashable scalar (e.g. a str) per node column.

    >>> names, grouped = group_samples(np.array([[1, 2, 4], [10, 20, 40]]), ["a", "b", "a"])
    >>> names, grouped.tolist()
    (['a', 'b'], [[5, 2], [50, 20]])
    """
    array = _as_2d(samples)
    tolist = getattr(keys, "tolist", None)  # an array's or Series' cells as Python scalars
    key_array = np.asarray(tolist() if tolist is not None else list(keys), dtype=object)
    if key_array.shape != (array.shape[1],):
        raise ArgumentError(f"need one key per node column ({array.shape[1]}), got "
                            f"{key_array.shape[0]}")
    codes, uniques = pd.factorize(key_array, use_na_sentinel=False)
    if len(uniques) == 0:
        return [], np.zeros((array.shape[0], 0), dtype=array.dtype)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(len(uniques)))
    return list(uniques), np.add.reduceat(array[:, order], starts, axis=1)


def summary_of_totals(run_totals) -> dict[str, float]:
    """Median, IQR, mean, min and max (ns, float) of per-run totals; NaN when empty.

    >>> summary_of_totals([100, 200, 300, 400])
    {'median': 250.0, 'iqr': 150.0, 'mean': 250.0, 'min': 100.0, 'max': 400.0}
    """
    totals = np.asarray(run_totals, dtype=np.float64).ravel()
    if totals.size == 0:
        return dict.fromkeys(("median", "iqr", "mean", "min", "max"), float("nan"))
    p25, p50, p75 = np.percentile(totals, (25, 50, 75))
    return {
        "median": float(p50), "iqr": float(p75 - p25), "mean": float(totals.mean()),
        "min": float(totals.min()), "max": float(totals.max()),
    }


def with_flop_rate(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` plus `flop_per_s` (achieved FLOP/s: flops / median seconds; NaN where either
    is 0) when it has a `flops` column.

    Example:
        >>> with_flop_rate(pd.DataFrame({"flops": [2000, 0], "median": [1000.0, 5.0]}))[
        ...     "flop_per_s"].tolist()
        [2000000000.0, nan]
    """
    if "flops" not in frame:
        return frame
    flops = pd.to_numeric(frame["flops"], errors="coerce").astype(np.float64)
    median = frame["median"].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = flops * 1e9 / median
    frame["flop_per_s"] = rate.where((flops > 0) & (median > 0))
    return frame


def backward_statistics(forward, backward) -> pd.DataFrame:
    """STAT_COLUMNS of the ``backward`` (runs, nodes) samples prefixed ``backward_``, plus
    ``backward_ratio``: backward median / forward median (NaN where the forward's is 0).

    >>> backward_statistics(np.array([[10, 0]]), np.array([[30, 5]]))[
    ...     ["backward_median", "backward_ratio"]].values.tolist()
    [[30.0, 3.0], [5.0, nan]]
    """
    frame = node_statistics(backward).add_prefix("backward_")
    forward_median = node_statistics(forward)["median"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = frame["backward_median"].to_numpy() / forward_median
    frame["backward_ratio"] = np.where(forward_median > 0, ratio, np.nan)
    return frame
