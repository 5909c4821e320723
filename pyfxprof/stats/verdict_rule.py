"""The one rule that turns a row's change, its interval and its q-value into a verdict
(slower, faster, same within the margin, unresolved), and the confidence level of the
intervals it is read from, adjusted for the rows selected (false coverage rate).

Intervals are printed at the level 1 - fdr * max(R, 1) / m, R the rows that
Benjamini–Hochberg selects among the m tested (Benjamini and Yekutieli's false coverage
rate): a row's interval then excludes 0 exactly when its q-value is at most fdr, so a row
whose interval lies beyond the margin is never unresolved, and one whose interval holds 0
is never slower or faster.

Example:
    >>> adjusted_confidence([0.01, 0.5, 0.9, np.nan], fdr=0.05)    # 1 of 3 selected
    0.9833333333333333
    >>> verdicts([0.3], [0.1], [0.5], [0.2], margin=0.02, fdr=0.05).tolist()
    ['+']
"""

from __future__ import annotations

import math

import numpy as np

#: Verdict codes: slower, faster, same within the margin, unresolved (interval too wide).
SLOWER, FASTER, SAME, UNRESOLVED = "+", "-", "=", "?"


def adjusted_confidence(q_values, fdr: float) -> float:
    """The level of the intervals of rows with these Benjamini–Hochberg ``q_values``:
    1 - fdr * max(R, 1) / m (R rows with q <= fdr among the m with a q-value; with one row,
    1 - fdr).

    >>> adjusted_confidence([0.001, 0.002], 0.05), adjusted_confidence([0.5] * 10, 0.05)
    (0.95, 0.995)
    """
    q = np.asarray(q_values, dtype=np.float64)
    tested = int(np.isfinite(q).sum())
    selected = int((q[np.isfinite(q)] <= fdr).sum())
    return 1.0 - fdr * max(selected, 1) / max(tested, 1)


def verdicts(estimate, low, high, q_values, margin: float, fdr: float,
             shift: float | np.ndarray = 0.0) -> np.ndarray:
    """One verdict per row from a relative change's estimate and interval (fractions, at
    adjusted_confidence's level) and its q-value: SAME when the interval lies inside
    ±margin; SLOWER when it lies beyond +margin, or when q <= fdr, the estimate is at least
    the margin and the interval excludes 0; FASTER alike; UNRESOLVED otherwise (no decision
    at this precision, or a real change that may be smaller than the margin). ``shift``
    (log, one or per row): the part of each estimate its test takes out as common to all
    rows (a drift between two sessions, a block's common shift); an interval lies beyond
    the margin only once it is taken out, as the test judges it, and a q-value counts
    only in the direction the row departs from it: a row +24% whose rows all moved +64%
    departs downward, and its q-value says it is faster than the rest, not slower.

    >>> verdicts([0.24], [0.09], [0.41], [0.0002], 0.05, 0.05, shift=np.log(1.64)).tolist()
    ['?']

    >>> verdicts([0.1, 0.001, 0.0, -0.2, 0.015], [0.08, -0.01, -0.3, -0.25, 0.01],
    ...          [0.12, 0.01, 0.3, -0.15, 0.03], [0.001, 0.9, 0.9, 0.01, 0.001],
    ...          margin=0.02, fdr=0.05).tolist()
    ['+', '=', '?', '-', '?']
    """
    estimate, low, high, q = (np.asarray(a, dtype=np.float64)
                              for a in (estimate, low, high, q_values))
    inside = (low >= -margin) & (high <= margin)
    significant = (q <= fdr) & ~inside
    with np.errstate(invalid="ignore", divide="ignore"):  # (a change of -100%: log1p -inf)
        beyond_low, beyond_high = np.expm1(np.log1p(low) - shift), np.expm1(np.log1p(high) - shift)
        departure = np.log1p(estimate) - shift   # what the test found, in its direction
    slower = (significant & (estimate >= margin) & (low > 0) & (departure > 0)
              | (beyond_low >= margin) & (low > 0))
    faster = (significant & (estimate <= -margin) & (high < 0) & (departure < 0)
              | (beyond_high <= -margin) & (high < 0))
    result = np.full(estimate.shape, UNRESOLVED, dtype=object)
    result[inside] = SAME
    result[slower & ~inside] = SLOWER
    result[faster & ~inside] = FASTER
    return result


def smallest_resolvable(half_widths, margin: float) -> float:
    """The smallest change (fraction) a row can be resolved at: the median interval half
    width over the rows that have one, or the margin when it is larger; NaN without any.

    >>> smallest_resolvable([0.01, 0.03, 0.05, np.inf], 0.02)
    0.03
    """
    widths = np.asarray(half_widths, dtype=np.float64)
    widths = widths[np.isfinite(widths)]
    return math.nan if len(widths) == 0 else float(max(margin, np.median(widths)))
