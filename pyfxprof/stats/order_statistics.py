"""The distribution-free (order-statistic) interval of any quantile, the median's included: the
one interval of pyfxprof, right from 1 value to millions (log-space binomial, no overflow).

For values X(1) <= ... <= X(n) of any continuous distribution, the number B of values at or
below its q-quantile is Binomial(n, q); so P(X(l) > x_q) = P(B < l) and P(X(u) < x_q) =
P(B >= u). The interval [X(l), X(u)] takes the largest l and smallest u that keep each side
within (1 - CONFIDENCE) / 2; an end no order statistic reaches is infinite (-inf below, inf
above). See docs/latency.md.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ArgumentError, fraction
from .confidence import CONFIDENCE


def binomial_cdf(n: int, p: float) -> np.ndarray:
    """P(B <= k) for k = 0..n, B ~ Binomial(n, p), 0 < p < 1: the pmf built from the ratio of
    consecutive terms in log space and normalised (no factorial, no 2**n; no scipy.stats,
    which takes seconds to import).

    >>> binomial_cdf(2, 0.5).tolist()
    [0.25, 0.75, 1.0]
    """
    k = np.arange(n, dtype=np.float64)
    steps = np.log((n - k) / (k + 1.0)) + math.log(p) - math.log1p(-p)
    log_pmf = np.concatenate(([0.0], np.cumsum(steps)))
    pmf = np.exp(log_pmf - log_pmf.max())
    return np.cumsum(pmf) / pmf.sum()


def binomial_ppf(cdf: np.ndarray, q: float) -> int:
    """The smallest k with P(B <= k) >= q, as scipy.stats.binom.ppf (a relative tolerance of
    1e-10 on the cdf, as it has).

    >>> binomial_ppf(binomial_cdf(2, 0.5), 0.5)
    1
    """
    return int(np.searchsorted(cdf, q * (1.0 - 1e-10), side="left"))


def order_ranks(n: int, quantile: float, confidence: float = CONFIDENCE) -> tuple[int, int]:
    """1-based ranks (l, u) of the order statistics bounding `quantile` of `n` values with
    `confidence` (two-sided); l = 0: nothing bounds it from below, u = n + 1: from above.

    >>> order_ranks(20, 0.5), order_ranks(5, 0.5), order_ranks(0, 0.5)
    ((6, 15), (0, 6), (0, 1))
    """
    quantile, confidence = fraction("quantile", quantile), fraction("confidence", confidence)
    if n < 1:  # nothing to bound with
        return 0, n + 1
    alpha = (1.0 - confidence) / 2.0
    cdf = binomial_cdf(n, quantile)
    return binomial_ppf(cdf, alpha), binomial_ppf(cdf, 1.0 - alpha) + 1


def quantile_interval(values, quantile: float,
                      confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The distribution-free `confidence` interval on `quantile` of `values` (order_ranks'
    order statistics, in the values' unit); an end the values cannot reach is -inf / inf
    (both with no values; 1 value bounds a high quantile from below only). NaN or infinite
    values are an ArgumentError.

    >>> quantile_interval(range(1, 1001), 0.99)
    (983.0, 997.0)
    >>> quantile_interval([5, 6, 7, 8], 0.99)
    (7.0, inf)
    """
    ordered = np.sort(np.asarray(values, dtype=np.float64).ravel())
    n = len(ordered)
    if n and not (math.isfinite(ordered[0]) and math.isfinite(ordered[-1])):
        raise ArgumentError("values must be finite numbers (NaN or inf found): "
                            "drop or fix those values first")
    low, high = order_ranks(n, quantile, confidence)
    return (float(ordered[low - 1]) if low >= 1 else -math.inf,
            float(ordered[high - 1]) if high <= n else math.inf)


def median_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """quantile_interval at 0.5: (-inf, inf) with fewer than runs_needed(0.5) = 6 values.

    >>> median_interval(range(100)), median_interval([3, 1, 2])
    ((39.0, 60.0), (-inf, inf))
    """
    return quantile_interval(values, 0.5, confidence)


def runs_needed(quantile: float, confidence: float = CONFIDENCE) -> int:
    """Fewest values whose largest bounds `quantile` from above with `confidence`
    (two-sided): quantile**n <= (1 - confidence) / 2; at 0.5 also from below.

    >>> runs_needed(0.99), runs_needed(0.9), runs_needed(0.5)
    (368, 36, 6)
    """
    quantile, confidence = fraction("quantile", quantile), fraction("confidence", confidence)
    alpha = (1.0 - confidence) / 2.0
    return max(math.ceil(math.log(alpha) / math.log(quantile) - 1e-9), 1)


def relative_half_width(interval: tuple[float, float], median: float) -> float:
    """Half the interval's width as a fraction of `median` (inf when unbounded or median 0).

    Example:
        >>> relative_half_width((98.0, 102.0), 100.0)
        0.02
    """
    low, high = interval
    if not median > 0 or math.isinf(low) or math.isinf(high):
        return math.inf
    return (high - low) / 2 / median
