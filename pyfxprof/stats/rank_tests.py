"""Named statistics of paired and multiple comparisons: the Wilcoxon signed-rank test and the
Hodges–Lehmann estimate with its interval (exact null distribution), and Benjamini–Hochberg
q-values. Pure numpy.

Example:
    >>> hodges_lehmann([0.01, 0.02, 0.03, 0.02, 0.01, 0.02])[0]
    0.02
"""

from __future__ import annotations

import math

import numpy as np

from .confidence import CONFIDENCE
from .ranks import average_ranks

#: Fewest non-zero paired differences for which a finite 95% interval exists (2/2^6 < 0.05).
MIN_PAIRS = 6


def signed_rank_cdf(n: int) -> np.ndarray:
    """P(W+ <= t) for t = 0..n(n+1)/2 under the null (each of ranks 1..n positive with p 1/2).

    >>> signed_rank_cdf(2).tolist()     # W+ in {0, 1, 2, 3}, each 1/4
    [0.25, 0.5, 0.75, 1.0]
    """
    density = np.zeros(n * (n + 1) // 2 + 1)
    density[0] = 1.0
    for rank in range(1, n + 1):
        shifted = np.zeros_like(density)
        shifted[rank:] = density[:-rank] if rank < len(density) else 0.0
        density = 0.5 * (density + shifted)
    return np.cumsum(density)


def signed_rank_p(differences) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test that the differences centre on 0
    (zeros dropped, tied magnitudes get average ranks; exact null). NaN with no non-zero one.

    >>> round(signed_rank_p([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), 5)   # all positive: 2 / 2**6
    0.03125
    """
    values = np.asarray(differences, dtype=np.float64)
    values = values[np.isfinite(values) & (values != 0)]
    n = len(values)
    if n == 0:
        return math.nan
    ranks = average_ranks(np.abs(values))
    w_plus = float(ranks[values > 0].sum())
    cdf = signed_rank_cdf(n)
    lower = cdf[min(int(math.floor(w_plus)), len(cdf) - 1)]
    upper = 1.0 - (cdf[int(math.ceil(w_plus)) - 1] if math.ceil(w_plus) >= 1 else 0.0)
    return float(min(1.0, 2.0 * min(lower, upper)))


def hodges_lehmann(differences, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(estimate, low, high): the median of the Walsh averages (d_i + d_j) / 2, i <= j, and
    the distribution-free interval between two of their order statistics chosen from the
    signed-rank null (low/high infinite with fewer than MIN_PAIRS differences).

    >>> hodges_lehmann([1.0, 2.0, 3.0])
    (2.0, -inf, inf)
    >>> hodges_lehmann(np.arange(1.0, 9.0))       # 1..8: k = 4 (P(W+ <= 3) = 5/256)
    (4.5, 2.0, 7.0)
    """
    values = np.asarray(differences, dtype=np.float64)
    values = values[np.isfinite(values)]
    n = len(values)
    if n == 0:
        return math.nan, -math.inf, math.inf
    i, j = np.triu_indices(n)
    walsh = np.sort((values[i] + values[j]) / 2.0)
    estimate = float(np.median(walsh))
    cdf = signed_rank_cdf(n)
    k = int(np.searchsorted(cdf, (1.0 - confidence) / 2.0, side="right"))  # P(W+ < k) <= a/2
    if k == 0 or n < MIN_PAIRS:
        return estimate, -math.inf, math.inf
    return estimate, float(walsh[k - 1]), float(walsh[len(walsh) - k])


def benjamini_hochberg(p_values) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values): reject rows with q <= the FDR level.
    NaN p-values stay NaN and do not count as tests.

    >>> benjamini_hochberg([0.01, 0.04, 0.03, np.nan]).round(3).tolist()
    [0.03, 0.04, 0.04, nan]
    """
    p = np.asarray(p_values, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    if len(tested) == 0:
        return q
    order = tested[np.argsort(p[tested], kind="stable")]
    scaled = p[order] * len(tested) / np.arange(1, len(tested) + 1)
    q[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return q
