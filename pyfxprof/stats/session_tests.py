"""Row tests between measurement sessions: interleaved blocks (paired) or whole sessions
(profiles saved apart), each row's change judged against the noise of its own design.

All changes are in log space inside (log test/control); the columns handed out are fractions
(expm1). Pure numpy (scipy only for Student's t with several sessions per side).

Example:
    >>> rng = np.random.default_rng(0)
    >>> control = rng.lognormal(10, 0.01, (12, 3)); test = control * [1.0, 1.2, 1.0]
    >>> out = paired_rows(block_values(control, np.arange(12)), block_values(test, np.arange(12)))
    >>> np.round(out["estimate"], 2).tolist()
    [0.0, 0.2, 0.0]
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .confidence import CONFIDENCE
from .rank_tests import hodges_lehmann, signed_rank_p
from .spread_curve import OUTLIER_SDS, SpreadCurve, fit_spread

#: Prior degrees of freedom of the pooled between-session variance with several sessions per
#: side (a row's own variance from 2-3 sessions is too rough alone; limma's moderation).
PRIOR_DF = 4.0
#: Consistency factor of the median absolute deviation for a normal scale.
MAD_SCALE = 1.4826
#: Standard error of a median relative to that of a mean, for normal data (sqrt(pi/2)).
MEDIAN_SE = 1.2533
#: Fewest rows on both sides to measure the noise between two single sessions; with fewer,
#: the runs inside each session are the only noise known (SessionNoise.measured False).
MIN_NOISE_ROWS = 5
#: The spread is a function of the row's duration (stats/spread_curve.py) with at least this
#: many rows, started from each row's neighbourhood: at least this many rows, and this
#: fraction of all, nearest in duration. A short row (an in-place ReLU of a few us, mostly
#: Python dispatch and cache misses) differs between two copies or sessions by far more
#: than a long one (a convolution): docs/ab.md.
LOCAL_ROWS, LOCAL_SHARE = 10, 0.25
#: Fewest rows for a spread by duration (fewer: one spread for all rows).
CURVE_ROWS = 2 * LOCAL_ROWS


def block_values(samples: np.ndarray, groups: np.ndarray, labels=None) -> np.ndarray:
    """Log of the median per group (block or session) and column: (groups, columns), for
    ``labels`` (default: the groups' sorted values >= 0); NaN for a label without runs. Runs
    of a negative group (left out: preempted) count nowhere; a value <= 0 counts as 1 ns.

    >>> block_values(np.array([[1, 10], [3, 10], [100, 10]]), np.array([0, 0, 1])).round(3).tolist()
    [[0.549, 2.303], [4.605, 2.303]]
    >>> block_values(np.array([[1], [3]]), np.array([0, -1]), labels=[0, 1]).round(3).tolist()
    [[0.0], [nan]]
    """
    groups = np.asarray(groups)
    values = np.log(np.maximum(np.asarray(samples, dtype=np.float64), 1.0))
    labels = np.unique(groups[groups >= 0]) if labels is None else labels
    return np.stack([np.median(values[groups == g], axis=0) if (groups == g).any()
                     else np.full(values.shape[1], np.nan) for g in labels])


def run_dispersion(samples: np.ndarray) -> np.ndarray:
    """Each column's own run-to-run dispersion: the robust SD (MAD) over the runs of its log
    time's departure from its median, less the run's common departure where that narrows
    it (with 3 columns or more): a row that jitters by itself inside a session (e.g. one
    whose data competes for a shared cache), not a run that was slow as a whole. A run's
    common departure is that of the sum of the *other* columns (each weighs by its time):
    a short row's departure (a few us, jittering by 20-50% run to run) says nothing of the
    run, and taken from a long row it would add that jitter to the long row's own.

    >>> run_dispersion(np.array([[100, 10], [110, 10], [90, 10], [100, 10]])).round(3).tolist()
    [0.071, 0.0]
    >>> run_dispersion(np.array([[100, 10, 1], [200, 20, 2], [100, 10, 1]])).round(3).tolist()
    [0.0, 0.0, 0.0]
    >>> run_dispersion(np.array([[500, 9, 1], [510, 11, 1], [490, 10, 1], [500, 9, 1]])
    ...                ).round(3).tolist()     # the 500 us row keeps its own 1.5%
    [0.015, 0.078, 0.0]
    """
    samples = np.maximum(np.asarray(samples, dtype=np.float64), 1.0)
    values = np.log(samples)
    departures = values - np.median(values, axis=0)
    own = _mad(departures)
    if departures.shape[1] < 3:
        return own
    others = np.log(np.maximum(samples.sum(axis=1, keepdims=True) - samples, 1.0))
    common = others - np.median(others, axis=0)
    return np.minimum(own, _mad(departures - common))


def _mad(departures: np.ndarray) -> np.ndarray:
    """The robust SD (MAD_SCALE x median absolute deviation) of each column."""
    return MAD_SCALE * np.median(np.abs(departures - np.median(departures, axis=0)), axis=0)


def median_errors(samples: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Standard error of each group's log median, from its runs' spread (MAD, robust to
    outliers): (groups, columns); infinite for a group of one run.

    >>> median_errors(np.array([[100], [110], [90], [100]]), np.zeros(4)).round(3).tolist()
    [[0.044]]
    """
    groups = np.asarray(groups)
    values = np.log(np.maximum(np.asarray(samples, dtype=np.float64), 1.0))
    errors = []
    for group in np.unique(groups):
        runs = values[groups == group]
        if len(runs) < 2:
            errors.append(np.full(values.shape[1], np.inf))
            continue
        mad = np.median(np.abs(runs - np.median(runs, axis=0)), axis=0)
        errors.append(MEDIAN_SE * MAD_SCALE * mad / math.sqrt(len(runs)))
    return np.stack(errors)


def paired_departures(control: np.ndarray, test: np.ndarray, shifts=None,
                      confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimates, errors, shifts) of matched blocks' rows (block_values of each side): per
    row, the Hodges–Lehmann estimate of its log ratio's departure from each block's common
    shift and the standard error read off its interval; the shifts (one per block) are the
    median row's log ratio in each block, or ``shifts`` as given (those of another view of
    the same blocks: a module is a sum of nodes, and its change is told from the nodes').

    >>> est, err, shift = paired_departures(np.zeros((8, 5)), np.full((8, 5), 0.1))
    >>> est.round(3).tolist(), shift.round(3).tolist()[:2]
    ([0.0, 0.0, 0.0, 0.0, 0.0], [0.1, 0.1])
    """
    differences = np.asarray(test) - np.asarray(control)  # NaN: a block missing on a side
    if shifts is None:
        with warnings.catch_warnings():  # a block missing on a side has no shift: NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            shifts = np.nanmedian(differences, axis=1)
    shifts = np.asarray(shifts, dtype=np.float64)
    excess = differences - shifts[:, None]
    found = np.array([hodges_lehmann(excess[:, c], confidence)
                      for c in range(differences.shape[1])]).reshape(-1, 3)
    errors = (found[:, 2] - found[:, 1]) / (2.0 * student_t().ppf(0.5 + confidence / 2, math.inf))
    return found[:, 0], errors, shifts


def paired_rows(control: np.ndarray, test: np.ndarray, common: bool = False,
                confidence: float = CONFIDENCE, durations=None, noise=None, shifts=None,
                spreads=None) -> dict:
    """Per column of matched blocks (block_values of each side): the Hodges–Lehmann estimate
    of the log ratio with its interval at ``confidence`` (fractions), and a p-value: the
    signed-rank test of the ratio itself, or, ``common`` (rows of one model, at least
    MIN_NOISE_ROWS), of the row's departure from the block's common shift
    (paired_departures) against its own error over blocks and the spread of the rows'
    departures (session_noise, among the rows of similar ``durations`` (ns) when given): a
    disturbance that slowed one side's whole block, or the differences any two copies of a
    model have row by row (larger on short rows), are not a change of the row. ``noise`` and ``shifts``: a measured SessionNoise and
    the blocks' shifts of the node rows of the same blocks, for a view of sums of nodes
    (modules, ops) whose few rows cannot measure the spread by duration themselves, and
    ``spreads``, each such row's spread from its nodes' (stats.row_verdicts.row_spreads);
    the interval is then the estimate plus or minus that test's half width (its spread and
    error), and ``shift`` (log) the part of the estimate the test takes out as common to
    the rows (the blocks' shifts and the rows' median departure; 0 otherwise), so that the
    interval less that shift and the test agree.

    >>> out = paired_rows(np.zeros((8, 1)), np.full((8, 1), 0.1))   # 8 blocks, all +10.5%
    >>> out["estimate"].round(4).tolist(), out["p_value"].round(4).tolist()
    ([0.1052], [0.0078])
    """
    differences = np.asarray(test) - np.asarray(control)  # NaN: a block missing on a side
    columns = range(differences.shape[1])
    own = np.array([hodges_lehmann(differences[:, c], confidence) for c in columns]).reshape(-1, 3)
    low, high = own[:, 1], own[:, 2]
    if common and differences.shape[1] >= MIN_NOISE_ROWS:
        given = noise if noise is not None and noise.measured else None
        departures, errors, _ = paired_departures(control, test, shifts if given else None)
        if given is None:
            given, spreads = session_noise(departures, errors, durations), None
        tested = single_session_rows(departures, errors, given, common=True,
                                     confidence=confidence, durations=durations,
                                     spreads=spreads)
        p_value = tested["p_value"]
        # the interval of the test's scale (its spread and error) around the estimate, and
        # the part of the estimate the test takes out as common to the rows
        half = (np.log1p(tested["high"]) - np.log1p(tested["low"])) / 2.0
        low, high = own[:, 0] - half, own[:, 0] + half
        shift = own[:, 0] - (departures - given.shift)
    else:
        p_value = np.array([signed_rank_p(differences[:, c]) for c in columns])
        shift = np.zeros(len(own))
    return {"estimate": np.expm1(own[:, 0]), "low": np.expm1(low), "high": np.expm1(high),
            "p_value": np.where(np.isnan(p_value), 1.0, p_value), "shift": shift}


@dataclass(frozen=True)
class SessionNoise:
    """Between two single sessions: ``shift``, the log ratio common to all rows (the median
    row's), and ``spread``, the SD of the rows' log ratios around it beyond their
    within-session errors (the session-level noise a row is tested against), measured over
    ``df`` + 1 rows. ``curve``: the spread as a function of the row's duration (a
    stats.spread_curve.SpreadCurve), fitted with CURVE_ROWS rows or more, each row's among
    the others with fewer (session_noise); ``spread`` is then its median over the rows.
    ``measured`` False: too few rows (MIN_NOISE_ROWS) to measure it; shift and spread are
    then 0. ``averaged``: the spread is that between one pair of copies and the rows tested
    are means over this many independent pairs (run.compare's copies):
    spread_at gives the mean's, spread / sqrt(averaged)."""

    shift: float
    spread: float
    df: int = 0
    measured: bool = True
    curve: SpreadCurve | None = None
    averaged: int = 1

    @property
    def relative_shift(self) -> float:
        """The common shift as a fraction (test / control - 1)."""
        return math.expm1(self.shift)

    def spread_at(self, durations=None, dispersion=None) -> np.ndarray | float:
        """The spread a row of each duration (ns) is tested against: the curve's, or
        ``spread`` without one; at least the row's own run-to-run ``dispersion`` (SD of its
        log time, run_dispersion) where given: a row that jitters by s run to run inside a
        session (its time depends on a state that varies, such as what shares its cache)
        can sit anywhere in that range in another session, where the state's mix differs.

        >>> SessionNoise(0.0, 0.1, 9).spread_at([1e4])
        0.1
        >>> SessionNoise(0.0, 0.1, 9).spread_at([1e4, 1e4], [0.05, 0.3]).tolist()
        [0.1, 0.3]
        >>> SessionNoise(0.0, 0.1, 9, averaged=4).spread_at([1e4])
        0.05
        """
        spread = (self.spread if self.curve is None or durations is None
                  else self.curve.at(durations)) / math.sqrt(self.averaged)
        if dispersion is None:
            return spread
        return np.maximum(spread, np.nan_to_num(np.asarray(dispersion, dtype=np.float64)))


def session_noise(log_ratios, errors, durations=None, per_row: int = 1) -> SessionNoise:
    """SessionNoise of per-row log ratios and their within-session standard errors: the
    median ratio, and the SD of the rows within OUTLIER_SDS robust SDs (MAD) of it, with
    their mean squared error taken out (with fewer than MIN_NOISE_ROWS such rows, the
    robust SD itself). With the rows' ``durations`` (ns) and at least CURVE_ROWS rows, the
    spread as a function of duration (``curve``: spread_curve.fit_spread from each row's
    local_spreads; ``per_row``: the values of one row, each neighbourhood holding at least
    LOCAL_ROWS rows' worth); with fewer (more than MIN_NOISE_ROWS), each row's spread that of
    the others (``curve`` too: _left_out_noise).

    >>> noise = session_noise([0.10, 0.12, 0.08, 0.11, 0.09, 0.9], [0.0] * 6)
    >>> round(noise.shift, 3), round(noise.spread, 4), noise.df
    (0.105, 0.0158, 4)
    >>> session_noise([0.7, 0.0], [0.01, 0.01])
    SessionNoise(shift=0.0, spread=0.0, df=0, measured=False, curve=None, averaged=1)
    """
    ratios, errors = np.asarray(log_ratios, float), np.asarray(errors, float)
    usable = np.isfinite(ratios) & np.isfinite(errors)
    if durations is not None:
        durations = np.asarray(durations, float)
        usable &= np.isfinite(durations) & (durations > 0)
    if usable.sum() < MIN_NOISE_ROWS:
        return SessionNoise(0.0, 0.0, measured=False)
    ratios, errors = ratios[usable], errors[usable]
    shift = float(np.median(ratios))
    if durations is not None and len(ratios) >= CURVE_ROWS:
        durations = durations[usable]
        order = np.argsort(durations, kind="stable")
        initial = np.empty(len(ratios))
        initial[order], rows = local_spreads(ratios[order] - shift, errors[order], per_row)
        curve = fit_spread(ratios - shift, errors, durations, initial)
        # df: the spread at a duration rests mostly on the rows of about that duration
        return SessionNoise(shift, float(np.median(curve.at(durations))), rows - 1,
                            curve=curve)
    if durations is not None and per_row == 1 and len(ratios) > MIN_NOISE_ROWS:
        return _left_out_noise(ratios - shift, errors, durations[usable], shift)
    spread, df = _spread(ratios - shift, errors)
    return SessionNoise(shift, spread, df)


def _left_out_noise(departures: np.ndarray, errors: np.ndarray, durations: np.ndarray,
                    shift: float) -> SessionNoise:
    """The SessionNoise of fewer than CURVE_ROWS rows (more than MIN_NOISE_ROWS: as many
    others): each row's spread that of the *other* rows around their own median (_spread),
    and at least the departure that the other row nearest it in duration shares (the
    smaller of the two where both depart the same way, less that row's error); a row of
    another duration (a module summing nodes) the spread of the rows nearest it in duration
    (SpreadCurve's floor, no fit).

    A row's own change must not widen the noise it is tested against: with 13 rows, a node
    doubled (+0.5 to +0.7 log against the common shift) was within OUTLIER_SDS of the short
    rows' robust SD and widened the one spread from about 0.12 to 0.23, hiding itself. And
    two rows of about one duration (two 500 us matmul nodes among rows of a few us) share
    the drift of their kind between two sessions (a host's slow phase slows a matmul and
    Python dispatch by different factors): the departure the nearest row shares is noise to
    the row, not its change; the rest of it is not (one of two 500 us nodes doubled, +0.6
    against the short rows, the other +0.05 or -0.1: 0.05 or nothing of it is shared)
    (benchmarks/bench_gate.py; docs/diff.md).

    >>> departures = np.array([0.1, -0.1] * 4 + [0.45])    # a 1 ms row +0.45, 8 short rows
    >>> noise = _left_out_noise(departures, np.zeros(9), np.r_[np.arange(1, 9) * 1e3, 1e6], 0.0)
    >>> noise.curve.at([1e6]).round(3).tolist(), round(_spread(departures, np.zeros(9))[0], 3)
    ([0.107], 0.18)
    >>> departures = np.r_[[0.1, -0.1] * 4, 0.4, 0.4]   # two 1 ms rows +0.4, 0.3 off the rest
    >>> _left_out_noise(departures, np.zeros(10), np.r_[np.arange(1, 9) * 1e3, 1e6, 1.1e6],
    ...                 0.0).curve.at([1e6]).round(3).tolist()
    [0.3]
    """
    logs = np.log(durations)
    spreads, dfs = np.empty(len(departures)), []
    for row in range(len(departures)):
        rest, rest_errors = np.delete(departures, row), np.delete(errors, row)
        centre = np.median(rest)
        spread, df = _spread(rest - centre, rest_errors)
        peer = np.argmin(np.abs(np.delete(logs, row) - logs[row]))
        own, near = departures[row] - centre, rest[peer] - centre
        if own * near > 0:  # the nearest row departs the same way: what both do is noise
            shared = min(abs(own), abs(near))
            spread = max(spread, math.sqrt(max(shared ** 2 - rest_errors[peer] ** 2, 0.0)))
        spreads[row] = spread
        dfs.append(df)
    order = np.argsort(durations, kind="stable")
    curve = SpreadCurve((0.0, 0.0, 0.0), 1.0, float(durations.min()), float(durations.max()),
                        len(departures), tuple(logs[order]), tuple(spreads[order]))
    return SessionNoise(shift, float(np.median(spreads)), int(np.median(dfs)), curve=curve)


def _spread(departures: np.ndarray, errors: np.ndarray, local: bool = False
            ) -> tuple[float, int]:
    """(spread, df) of rows' departures from the common shift (session_noise): their
    variance, or, ``local`` (a neighbourhood), their mean square (a departure that all rows
    of a duration share is noise to those rows, not a change of each)."""
    robust = max(MAD_SCALE * np.median(np.abs(departures)), math.sqrt(np.median(errors ** 2)))
    kept = np.abs(departures) <= OUTLIER_SDS * robust
    if kept.sum() < MIN_NOISE_ROWS:
        spread_sq = robust ** 2 - np.median(errors ** 2)
        return math.sqrt(max(spread_sq, 0.0)), len(departures) - 1
    kept_departures = departures[kept]
    square = np.mean(kept_departures ** 2) if local else np.var(kept_departures, ddof=1)
    spread_sq = square - np.mean(errors[kept] ** 2)
    return math.sqrt(max(spread_sq, 0.0)), int(kept.sum()) - 1


def local_spreads(departures, errors, per_row: int = 1) -> tuple[np.ndarray, int]:
    """(each row's spread, rows per neighbourhood) of rows sorted by duration: _spread of the
    row's neighbourhood, the max(LOCAL_ROWS, LOCAL_SHARE of all) other rows nearest in the
    order (the row itself left out: its own change must not hide it); ``per_row`` values
    of each row (pairs of copies): LOCAL_ROWS times as many.

    >>> d = np.array([0.3, -0.3, 0.3, -0.3, 0.3] * 2 + [0.01, -0.01, 0.01, -0.01, 0.01] * 6)
    >>> spreads, rows = local_spreads(d, np.zeros(40))
    >>> float(spreads[0].round(2)), float(spreads[-1].round(2)), rows
    (0.28, 0.01, 10)
    """
    departures, errors = np.asarray(departures, float), np.asarray(errors, float)
    n = len(departures)
    rows = min(n - 1, max(LOCAL_ROWS * per_row, int(math.ceil(LOCAL_SHARE * n))))
    starts = np.clip(np.arange(n) - rows // 2, 0, n - rows - 1)
    spreads = np.empty(n)
    for row, start in enumerate(starts):
        others = np.delete(np.arange(start, start + rows + 1), row - start)
        spreads[row] = _spread(departures[others], errors[others], True)[0]
    return spreads, rows


def single_session_rows(log_ratios, errors, noise: SessionNoise, common: bool,
                        confidence: float = CONFIDENCE, durations=None, spreads=None,
                        dispersion=None) -> dict:
    """One session per side: each row's log ratio beyond the common shift (``common`` True
    for rows; False for the whole model, whose own ratio is tested) against the session-level
    spread and its within-session error, two-sided: Student's t with the spread's ``df``
    (normal when the spread was not measured); the spread at the row's duration (ns,
    ``durations``) and run-to-run ``dispersion`` (SessionNoise.spread_at), or each row's own
    ``spreads`` where given (a row that sums nodes: stats.row_verdicts.row_spreads). The
    estimate and its interval are of the row's own change (fractions); the p-value is of its
    departure from the others' (``shift``: the common shift taken out, log).

    >>> out = single_session_rows([0.1, 0.6], [0.01, 0.01], SessionNoise(0.1, 0.02, 12), True)
    >>> out["p_value"].round(4).tolist(), out["estimate"].round(3).tolist()
    ([1.0, 0.0], [0.105, 0.822])
    """
    t_dist = student_t()
    df = noise.df if noise.measured and noise.df > 0 else math.inf
    ratios = np.asarray(log_ratios, float)
    excess = ratios - (noise.shift if common else 0.0)
    spread = noise.spread_at(durations, dispersion)
    if spreads is not None:  # NaN: a row without its own
        spread = np.where(np.isnan(spreads), spread, np.asarray(spreads, float))
    scale = np.sqrt(spread ** 2 + np.asarray(errors, float) ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(excess) / scale
    p_value = np.where(np.isfinite(z), 2.0 * t_dist.sf(np.nan_to_num(z), df), 1.0)
    half = t_dist.ppf(0.5 + confidence / 2.0, df) * scale
    return {"estimate": np.expm1(ratios), "low": np.expm1(ratios - half),
            "high": np.expm1(ratios + half), "p_value": p_value,
            "shift": np.full(ratios.shape, noise.shift if common else 0.0)}


def several_session_rows(control: np.ndarray, test: np.ndarray, moderate: bool = True,
                         confidence: float = CONFIDENCE) -> dict:
    """Several sessions per side (block_values of each side's sessions): a two-sample t-test
    of each column's log ratio over sessions, with the pooled variance moderated toward the
    columns' median variance (PRIOR_DF) when ``moderate``; fractions.

    >>> c = np.log([[100.0], [104.0], [98.0]]); t = np.log([[130.0], [128.0], [133.0]])
    >>> out = several_session_rows(c, t, moderate=False)
    >>> out["estimate"].round(3).tolist(), bool(out["p_value"][0] < 0.001)
    ([0.295], True)
    """
    t_dist = student_t()
    n_c, n_t = len(control), len(test)
    df: float = n_c + n_t - 2
    ratios = test.mean(axis=0) - control.mean(axis=0)
    squares = (((control - control.mean(axis=0)) ** 2).sum(axis=0)
               + ((test - test.mean(axis=0)) ** 2).sum(axis=0))
    variance = squares / max(df, 1)
    if moderate and len(variance) > 1:
        variance = (df * variance + PRIOR_DF * np.median(variance)) / (df + PRIOR_DF)
        df = df + PRIOR_DF
    scale = np.sqrt(variance * (1.0 / n_c + 1.0 / n_t))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_value = np.where(scale > 0, 2.0 * t_dist.sf(np.abs(ratios) / scale, df),
                           np.where(ratios == 0, 1.0, 0.0))
    half = t_dist.ppf(0.5 + confidence / 2.0, df) * scale
    return {"estimate": np.expm1(ratios), "low": np.expm1(ratios - half),
            "high": np.expm1(ratios + half), "p_value": p_value}


def student_t():
    """scipy's Student t distribution, or a one-line error naming the package."""
    try:
        from scipy.stats import t as student_t
    except ImportError:
        from ..errors import PyfxprofError
        raise PyfxprofError("tests between sessions need scipy; `pip install scipy`") from None
    return student_t
