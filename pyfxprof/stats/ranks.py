"""Rank statistics in numpy: average ranks and Spearman's rank correlation with its p-value,
as scipy.stats computes them, without importing scipy.stats (seconds), for the report's
warm-up line."""

from __future__ import annotations

import math

import numpy as np


def average_ranks(values) -> np.ndarray:
    """Ranks 1..n down axis 0 of (n,) or (n, columns) `values`, ties given their average rank
    (scipy.stats.rankdata(values, axis=0)).

    Example:
        >>> average_ranks([10, 30, 20, 30]).tolist()
        [1.0, 3.5, 2.0, 3.5]
    """
    array = np.asarray(values, dtype=np.float64)
    flat = array.ndim == 1
    array = array[:, None] if flat else array
    n = array.shape[0]
    order = np.argsort(array, axis=0, kind="stable")
    ordered = np.take_along_axis(array, order, axis=0)
    positions = np.arange(n)[:, None].repeat(array.shape[1], axis=1)
    starts = np.ones_like(ordered, dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    first = np.maximum.accumulate(np.where(starts, positions, 0), axis=0)
    ends = np.ones_like(starts)
    ends[:-1] = starts[1:]
    last = np.minimum.accumulate(np.where(ends, positions, n - 1)[::-1], axis=0)[::-1]
    ranks = np.empty_like(ordered)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=0)
    return ranks[:, 0] if flat else ranks


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 1000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return result


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (scipy.special.betainc).

    Example:
        >>> round(incomplete_beta(2.0, 3.0, 0.4), 6)
        0.5248
    """
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
                 + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def spearman(x, y) -> tuple[float, float]:
    """(rho, two-sided p-value) of Spearman's rank correlation of `x` and `y`, the p-value
    from Student's t with n - 2 degrees of freedom (scipy.stats.spearmanr).

    Example:
        >>> rho, p = spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
        >>> round(rho, 2), round(p, 3)
        (0.8, 0.104)
    """
    rx, ry = average_ranks(x) - (len(x) + 1) / 2.0, average_ranks(y) - (len(y) + 1) / 2.0
    rho = float((rx * ry).sum() / math.sqrt((rx ** 2).sum() * (ry ** 2).sum()))
    dof = len(rx) - 2
    if abs(rho) >= 1.0:
        return rho, 0.0
    t_squared = rho * rho * dof / ((1.0 - rho) * (1.0 + rho))
    return rho, incomplete_beta(dof / 2.0, 0.5, dof / (dof + t_squared))
