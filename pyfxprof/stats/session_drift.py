"""One session per side: the whole model's change judged against the drift between the two
sessions that the rows measure (their common shift and their spread around it).

A drift between two sessions (frequency, cache and memory placement, other jobs) moves every
row; a change of the code moves the rows it touches. The whole model's log ratio is compared
with the rows' common shift: a departure many times the session noise of a sum of rows of
the model's durations is a change the drift does not explain (a node doubled, the long rows
slowed); a change that is the common shift itself cannot be told from a drift with one
session per side (docs/diff.md).

Example:
    >>> noise = SessionNoise(0.0, 0.02, 12)
    >>> judge_total(np.log(1.48), 0.005, noise, 0.012, 0.05, 0.05)["change"]
    '+'
    >>> judge_total(np.log(1.2), 0.005, SessionNoise(np.log(1.2), 0.02, 12), 0.012, 0.05, 0.05)["change"]
    '?'
"""

from __future__ import annotations

import math

import numpy as np

from .confidence import CONFIDENCE
from .verdict_rule import verdicts
from .session_tests import SessionNoise, student_t

#: The whole model's session noise is taken as this many times the rows' estimate of it
#: (total_drift): its time is mostly in a few long rows, whose drift between sessions the
#: many short ones measure only roughly, so a change counts as beyond the drift only when
#: it is many (about 4) times that estimate: of 200 generated pairs of sessions whose rows
#: all shifted alike by 10-50% (tests/stats/test_session_drift.py), 3 totals came out
#: slower or faster at 1x, 1 at 2x.
DRIFT_ALLOWANCE = 2.0


def total_drift(durations, spreads) -> float:
    """SD (log) of a whole model's departure from the rows' common shift that the session
    noise alone gives: each row's spread (log SD) weighted by its share of the time, the
    rows independent, sqrt(sum (t_i s_i)^2) / sum t_i; NaN without rows.

    >>> round(total_drift([300.0, 300.0, 10.0], [0.02, 0.02, 0.5]), 4)
    0.0161
    """
    durations = np.asarray(durations, dtype=np.float64)
    spreads = np.broadcast_to(np.asarray(spreads, dtype=np.float64), durations.shape)
    usable = np.isfinite(durations) & np.isfinite(spreads) & (durations > 0)
    if not usable.any():
        return math.nan
    weighted = durations[usable] * spreads[usable]
    return float(math.sqrt(np.sum(weighted ** 2)) / np.sum(durations[usable]))


def judge_total(log_ratio: float, error: float, noise: SessionNoise, drift: float,
                margin: float, fdr: float) -> dict:
    """The whole model's ``estimate``, ``low``, ``high`` (fractions: its change and interval
    from the session noise of its rows, DRIFT_ALLOWANCE x ``drift``, and its own error),
    ``p_value`` (of its
    departure from the rows' common shift, ``noise.shift``, in the direction of its change;
    1 against it) and ``change`` (verdict_rule.verdicts with that p-value): "+" / "-" only
    when the departure is resolved, so a change that is the rows' common shift itself stays
    "?" (a drift between sessions looks the same); "=" when the interval is inside ±margin.

    >>> out = judge_total(np.log(1.02), 0.004, SessionNoise(0.02, 0.02, 12), 0.004, 0.05, 0.05)
    >>> out["change"], round(out["high"], 3)
    ('=', 0.04)
    """
    df = noise.df if noise.measured and noise.df > 0 else math.inf
    scale = math.hypot(DRIFT_ALLOWANCE * drift if math.isfinite(drift) else 0.0, error)
    half = float(student_t().ppf(0.5 + CONFIDENCE / 2.0, df)) * scale
    departure = log_ratio - noise.shift
    if scale > 0:
        p_value = float(2.0 * student_t().sf(abs(departure) / scale, df))
    else:
        p_value = 1.0 if departure == 0 else 0.0
    if departure * log_ratio <= 0:  # departs against its own change: the shift explains it
        p_value = 1.0
    low, high = math.expm1(log_ratio - half), math.expm1(log_ratio + half)
    change = verdicts([math.expm1(log_ratio)], [low], [high], [p_value], margin, fdr,
                      shift=noise.shift)[0]
    return {"estimate": math.expm1(log_ratio), "low": low, "high": high, "p_value": p_value,
            "change": change}


def may_hide_a_slowdown(estimate: float, change: str, shift: float, threshold: float) -> bool:
    """One session per side: whether the whole model's change (its verdict ``change`` and
    ``estimate``, a fraction) may be a slowdown of at least ``threshold`` that the two
    sessions cannot tell from a drift: unresolved ("?") and at least ``threshold`` either as
    measured (the rows' common shift ``shift``, log, a change of the whole model) or
    against that shift (the shift a drift between sessions: the test session 40% faster
    as a whole hides a node doubled inside a total of -2%).

    >>> may_hide_a_slowdown(0.08, "?", 0.0, 0.05), may_hide_a_slowdown(-0.02, "?", -0.4, 0.05)
    (True, True)
    >>> may_hide_a_slowdown(-0.02, "?", 0.0, 0.05), may_hide_a_slowdown(0.2, "=", 0.2, 0.05)
    (False, False)
    """
    if change != "?" or not math.isfinite(estimate):
        return False
    return estimate >= threshold or math.expm1(math.log1p(estimate) - shift) >= threshold

