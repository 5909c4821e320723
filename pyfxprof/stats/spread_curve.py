"""The spread of rows' changes between two copies or sessions of one model as a function of the
row's duration: a short row (an in-place ReLU of a few us: Python dispatch and cache misses)
differs between two copies by far more than a long one (a convolution), docs/ab.md. A variance
function sigma^2(t) = a + b (t0 / t) + c (t0 / t)^2 with a, b, c >= 0, fitted to the rows'
squared departures less their own squared errors by iteratively reweighted non-negative least
squares, rows beyond OUTLIER_SDS of it left out (a real change must not widen the noise). Pure
numpy.

Example:
    >>> t = np.geomspace(1e4, 1e7, 40)
    >>> departures = np.where(np.arange(40) % 2, 1, -1) * np.sqrt(0.01 ** 2 + (2e3 / t) ** 2)
    >>> curve = fit_spread(departures, np.zeros(40), t, np.abs(departures))
    >>> [round(float(s), 3) for s in curve.at([1e4, 1e7])]
    [0.2, 0.01]
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

#: Rows further than this many SDs from the common shift are left out of the spread (a real
#: change of a few rows must not widen the noise the others are tested against).
OUTLIER_SDS = 3.5
#: Reweighting rounds of the fit.
ITERATIONS = 5
#: Floor of a row's variance in the weights (a 0.1% SD): no row weighs without bound.
FLOOR_VARIANCE = 1e-6
#: Fewest rows kept for a fit (fewer: the initial spreads are kept as they are).
MIN_FIT_ROWS = 5


@dataclass(frozen=True)
class SpreadCurve:
    """sigma(t) = sqrt(a + b (t0/t) + c (t0/t)^2), ``coefficients`` (a, b, c) and ``scale_ns``
    (t0), for durations clamped to the fitted rows' range [``low_ns``, ``high_ns``] (no
    extrapolation), or the initial spreads' where larger (``floor``: the rows' log ns,
    sorted, and their initial spreads, interpolated); ``rows``: the rows kept in the fit."""

    coefficients: tuple
    scale_ns: float
    low_ns: float
    high_ns: float
    rows: int
    floor_at: tuple = ()
    floor: tuple = ()

    def at(self, durations) -> np.ndarray:
        """The spread (SD of a log ratio) of rows of these durations (ns).

        >>> SpreadCurve((0.0001, 0.0, 0.0), 1.0, 1.0, 2.0, 9).at([5.0]).round(3).tolist()
        [0.01]
        """
        clamped = np.clip(np.asarray(durations, dtype=np.float64), self.low_ns, self.high_ns)
        fitted = np.sqrt(np.maximum(_terms(clamped, self.scale_ns) @ self.coefficients, 0.0))
        if not self.floor:
            return fitted
        return np.maximum(fitted, np.interp(np.log(clamped), self.floor_at, self.floor))


def _terms(durations: np.ndarray, scale_ns: float) -> np.ndarray:
    """The variance function's terms (1, t0/t, (t0/t)^2) per duration: (rows, 3)."""
    u = scale_ns / durations
    return np.stack([np.ones_like(u), u, u * u], axis=-1)


def nonnegative_fit(terms: np.ndarray, values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted least squares of `values` on the columns of `terms` with non-negative
    coefficients (the best of the fits on each subset of columns whose coefficients are all
    >= 0; zeros when none is).

    >>> nonnegative_fit(np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]]),
    ...                 np.array([3.0, 2.0, 1.0]), np.ones(3)).round(3).tolist()
    [2.0, 0.0]
    """
    root = np.sqrt(weights)
    best, best_cost = np.zeros(terms.shape[1]), float(np.sum(weights * values ** 2))
    for size in range(1, terms.shape[1] + 1):
        for columns in itertools.combinations(range(terms.shape[1]), size):
            chosen = list(columns)
            found = np.linalg.lstsq(terms[:, chosen] * root[:, None], values * root,
                                    rcond=None)[0]
            if (found < 0).any():
                continue
            full = np.zeros(terms.shape[1])
            full[chosen] = found
            cost = float(np.sum(weights * (values - terms @ full) ** 2))
            if cost < best_cost:
                best, best_cost = full, cost
    return best


def fit_spread(departures, errors, durations, initial) -> SpreadCurve:
    """The SpreadCurve of rows' log-ratio `departures` from the common shift, their own
    standard `errors` and `durations` (ns), starting from each row's `initial` spread (e.g.
    among its neighbours in duration): ITERATIONS rounds of dropping the rows beyond
    OUTLIER_SDS of the current spreads and refitting with weights 1 / variance^2 (a squared
    departure's variance grows as the square of its own). A row's spread is the larger of
    the curve's and its initial one (a fit of a few terms can dip below the rows around a
    duration, and a dip is a false alarm), so the curve keeps the initial spreads too."""
    departures, errors, durations = (np.asarray(a, dtype=np.float64)
                                     for a in (departures, errors, durations))
    scale = float(np.median(durations))
    terms = _terms(durations, scale)
    initial = np.asarray(initial, dtype=np.float64)
    variance = initial ** 2
    coefficients, kept = None, np.ones(len(departures), dtype=bool)
    for _ in range(ITERATIONS):
        total = np.maximum(variance + errors ** 2, FLOOR_VARIANCE)
        kept = np.abs(departures) <= OUTLIER_SDS * np.sqrt(total)
        if kept.sum() < MIN_FIT_ROWS:
            break
        coefficients = nonnegative_fit(terms[kept], departures[kept] ** 2 - errors[kept] ** 2,
                                       1.0 / total[kept] ** 2)
        variance = np.maximum(terms @ coefficients, initial ** 2)
    if coefficients is None:  # too few rows to fit: a constant at the initial spreads' mean
        coefficients = np.array([float(np.mean(variance)), 0.0, 0.0])
    order = np.argsort(durations, kind="stable")
    return SpreadCurve(tuple(float(c) for c in coefficients), scale, float(durations.min()),
                       float(durations.max()), int(kept.sum()),
                       tuple(np.log(durations[order])), tuple(initial[order]))
