"""The verdict of every row of a comparison under its design: interleaved blocks (paired),
one session per side, or several sessions per side; the runs of each side grouped by block or
session (data.sessions.run_groups), Benjamini–Hochberg across rows, verdicts against the margin.

Example:
    >>> rng = np.random.default_rng(1)
    >>> control = rng.lognormal(10, 0.02, (24, 3)); test = control * [1.0, 1.3, 1.0]
    >>> blocks = np.repeat(np.arange(12), 2)
    >>> judge(Design("paired"), control, test, blocks, blocks, 0.02, 0.05)["change"].tolist()
    ['=', '+', '=']
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .confidence import CONFIDENCE
from .rank_tests import benjamini_hochberg
from .session_drift import judge_total, total_drift
from .verdict_rule import adjusted_confidence, verdicts
from .session_tests import (PRIOR_DF, SessionNoise, block_values, median_errors,
                            paired_departures, paired_rows, run_dispersion, session_noise,
                            several_session_rows, single_session_rows)

#: Designs of a comparison: matched blocks of an interleaved run (run.compare), one saved
#: session per side, several sessions per side.
DESIGNS = ("paired", "single", "sessions")


@dataclass(frozen=True)
class Design:
    """How the two sides' runs relate: ``kind`` (DESIGNS) and, for "single" and "paired",
    the session noise measured over the node rows (None: measured over the rows judged);
    "paired" also: ``shifts``, the node rows' common shift in each block (log), and
    ``copies``, the copy of the models each block ran (run.compare); ``standardized``: the
    nodes' departures from the common shift over their noise, in the order of the node
    columns measured (with_node_noise), for how the nodes of a row move together;
    ``drift``: one session per side, the session noise of a sum of all node rows (log SD,
    session_drift.total_drift), what the whole model's change is judged against."""

    kind: str
    noise: SessionNoise | None = None
    copies: tuple = ()
    shifts: tuple = ()
    standardized: tuple = ()   # with a noise: each node's departure / its noise (z)
    drift: float = math.nan    # "single": the session noise of the whole model (total_drift)


def design_of(control_meta: dict, test_meta: dict, control_groups, test_groups) -> Design:
    """"paired" when both sides come from one interleaved run (same pair id and blocks),
    "sessions" when either side has several sessions, else "single".

    >>> design_of({}, {}, np.zeros(3), np.zeros(3)).kind
    'single'
    """
    pair = (control_meta.get("ab") or {}).get("pair")
    if pair is not None and pair == (test_meta.get("ab") or {}).get("pair"):
        return Design("paired", copies=tuple(control_meta["ab"].get("copies") or ()))
    several = len(np.unique(control_groups)) > 1 or len(np.unique(test_groups)) > 1
    return Design("sessions" if several else "single")


def single_noise(control: np.ndarray, test: np.ndarray) -> SessionNoise:
    """The SessionNoise of two single sessions (runs x rows each).

    >>> c = np.full((5, 6), 1000); c[::2] += 20
    >>> round(single_noise(c, c * 1.1).relative_shift, 3)
    0.1
    """
    return session_noise(*_single_ratios(control, test))


def _single_ratios(control: np.ndarray, test: np.ndarray) -> tuple:
    """(log ratios of the median runs, their standard errors, durations (ns)) per row."""
    groups_c, groups_t = np.zeros(len(control)), np.zeros(len(test))
    logs = block_values(control, groups_c)[0]
    ratios = block_values(test, groups_t)[0] - logs
    errors = np.hypot(median_errors(control, groups_c)[0], median_errors(test, groups_t)[0])
    return ratios, errors, np.exp(logs)


def pooled_dispersion(control: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Each row's run-to-run dispersion (SD of its log time) pooled over the two sides.

    >>> pooled_dispersion(np.array([[1.0], [1.0]]), np.array([[100.0], [110.0]])).round(3).tolist()
    [0.05]
    """
    return np.sqrt((run_dispersion(control) ** 2 + run_dispersion(test) ** 2) / 2.0)


def _block_labels(control_groups, test_groups) -> np.ndarray:
    """The blocks of an interleaved run that either side has a (not preempted) run in."""
    control_groups, test_groups = np.asarray(control_groups), np.asarray(test_groups)
    return np.union1d(control_groups[control_groups >= 0], test_groups[test_groups >= 0])


def _durations(blocks: np.ndarray) -> np.ndarray:
    """Each row's duration (ns): the median over blocks of its log median per block."""
    with warnings.catch_warnings():  # a row without a block on a side: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.exp(np.nanmedian(blocks, axis=0))


def paired_medians(control: np.ndarray, test: np.ndarray, control_groups,
                   test_groups) -> tuple[np.ndarray, np.ndarray]:
    """Each side's median per row over the blocks that either side ran (runs x rows each):
    the median over blocks of the row's median in each block, the blocks a paired
    estimate pairs (the median of all runs weighs blocks by their runs and mixes in the
    blocks only one side has).

    >>> c = np.array([[100.0], [100.0], [300.0]]); t = np.array([[110.0], [110.0], [330.0]])
    >>> [m.round(1).tolist() for m in paired_medians(c, t, [0, 0, 1], [0, 0, 1])]
    [[173.2], [190.5]]
    """
    labels = _block_labels(control_groups, test_groups)
    return (_durations(block_values(control, np.asarray(control_groups), labels)),
            _durations(block_values(test, np.asarray(test_groups), labels)))


def with_node_noise(design: Design, control: np.ndarray, test: np.ndarray, control_groups,
                    test_groups) -> Design:
    """The design with the noise measured over the node rows (runs x nodes on both sides),
    for every view of the comparison to be judged against: one session per side, the
    session noise (single_noise); interleaved blocks, the spread of the nodes' departures
    from each block's common shift by duration (several copies per side: the spread
    between pairs of copies, between_copies_noise), and those shifts. A module or op row is a
    sum of nodes: its spread between two copies or sessions at its duration is the nodes'
    at that duration, which its view's few rows could not measure (docs/ab.md).

    >>> c = np.exp(np.random.default_rng(0).normal(10, 0.01, (12, 30))); b = np.arange(12)
    >>> with_node_noise(Design("paired"), c, c * 1.1, b, b).noise.measured
    True
    """
    if design.kind == "single":
        ratios, errors, durations = _single_ratios(control, test)
        noise = session_noise(ratios, errors, durations)
        spread = noise.spread_at(durations, pooled_dispersion(control, test))
        return Design("single", noise,
                      standardized=_standardized(ratios - noise.shift, errors, spread),
                      drift=(total_drift(durations, noise.spread_at(durations))
                             if noise.measured else math.nan))
    if design.kind != "paired":
        return design
    labels = _block_labels(control_groups, test_groups)
    control_blocks = block_values(control, np.asarray(control_groups), labels)
    test_blocks = block_values(test, np.asarray(test_groups), labels)
    departures, errors, shifts = paired_departures(control_blocks, test_blocks)
    durations = _durations(control_blocks)
    copy_of = copy_of_blocks(design.copies, labels)
    noise = (session_noise(departures, errors, durations) if copy_of is None else
             between_copies_noise(*per_copy_departures(control_blocks, test_blocks, shifts,
                                                       copy_of, errors), durations))
    if not noise.measured:
        return design
    return Design("paired", noise, design.copies, tuple(float(s) for s in shifts),
                  _standardized(departures, errors, noise.spread_at(durations)))


def copy_of_blocks(copies: tuple, labels: np.ndarray) -> np.ndarray | None:
    """The copy each of the blocks `labels` ran (Design.copies), or None with one copy.

    >>> copy_of_blocks((0, 1, 0, 1), np.array([1, 2, 3])).tolist(), copy_of_blocks((), None)
    ([1, 0, 1], None)
    """
    if len(set(copies)) < 2:
        return None
    return np.asarray(copies)[np.asarray(labels).astype(int)]


def per_copy_departures(control_blocks: np.ndarray, test_blocks: np.ndarray, shifts,
                        copy_of: np.ndarray, errors=None) -> tuple[np.ndarray, np.ndarray]:
    """(departures, errors), copies x rows: each pair of copies' Hodges–Lehmann departure
    from the blocks' common ``shifts`` over its own blocks, and its standard error: that of
    all blocks' (``errors``, else paired_departures') times sqrt(K), each pair having 1/K
    of the blocks (a pair's own interval needs 6 blocks or more: 20 blocks of 4 copies have
    5 each).

    >>> c = np.zeros((8, 6)); t = np.full((8, 6), 0.1); t[::2, 0] += 0.2   # row 0: pair 0
    >>> d, e = per_copy_departures(c, t, np.full(8, 0.1), np.arange(8) % 2)
    >>> d[:, 0].round(2).tolist(), d[:, 1].round(2).tolist()
    ([0.2, 0.0], [0.0, 0.0])
    """
    shifts = np.asarray(shifts, dtype=np.float64)
    pairs = np.unique(copy_of)
    if errors is None:
        _, errors, _ = paired_departures(control_blocks, test_blocks, shifts)
    departures = np.stack([paired_departures(control_blocks[copy_of == k],
                                             test_blocks[copy_of == k],
                                             shifts[copy_of == k])[0] for k in pairs])
    return departures, np.tile(errors * math.sqrt(len(pairs)), (len(pairs), 1))


def between_copies_noise(departures: np.ndarray, errors: np.ndarray,
                         durations: np.ndarray) -> SessionNoise:
    """The SessionNoise of rows timed as K pairs of copies (per_copy_departures, K x rows):
    the spread by duration of one pair's departure around the row's mean over the pairs
    (scaled by sqrt(K / (K - 1)) to one pair's variance) — a real change of a row is the
    same in every pair and does not enter it — for means over the K pairs (``averaged``),
    with its degrees of freedom counted in rows, not in rows x pairs: a row's mean over
    the pairs is tested, and what it departs by beyond the pairs' spread (a difference all
    copies of one side share: ResNet-18's A/A, docs/ab.md) varies between rows only; each
    neighbourhood by duration holds LOCAL_ROWS rows' worth of deviations (all K of each
    row), so that a model of few rows keeps its degrees of freedom (13 rows of 4 pairs:
    9, where neighbourhoods of LOCAL_ROWS deviations gave 2).

    >>> rng = np.random.default_rng(0)
    >>> d = rng.normal(0.0, 0.1, (4, 30)); d[:, 3] += 0.5      # row 3 changed in all pairs
    >>> noise = between_copies_noise(d, np.zeros((4, 30)), np.full(30, 1e5))
    >>> round(float(noise.spread), 2), noise.averaged, round(float(noise.spread_at()), 2)
    (0.1, 4, 0.05)
    >>> noise.df    # 30 rows x 4 pairs: neighbourhoods of 40 deviations, 10 rows
    9
    """
    k = len(departures)
    with warnings.catch_warnings():  # a row without blocks in a pair: NaN, left out
        warnings.simplefilter("ignore", RuntimeWarning)
        deviations = (departures - np.nanmean(departures, axis=0)) * math.sqrt(k / (k - 1))
        shift = float(np.nanmedian(np.nanmean(departures, axis=0)))
    noise = session_noise(deviations.ravel(), errors.ravel(), np.tile(durations, k), k)
    rows_df = max(1, round((noise.df + 1) / k) - 1)
    return replace(noise, shift=shift if noise.measured else 0.0, df=rows_df, averaged=k)


def own_copy_spreads(departures: np.ndarray, errors: np.ndarray, prior) -> np.ndarray:
    """Each row's spread for its mean over K pairs of copies (per_copy_departures): its own
    variance between the pairs less their errors, over K, moderated toward its ``prior``
    spread (the rows' by duration) with PRIOR_DF degrees of freedom, and never below that
    prior: a row whose pairs of copies disagree (a difference of the copies, not a change)
    gets a wider noise, one whose pairs agree by chance no narrower one (with it, at most
    2 of 40 synthetic A/A comparisons of pairs of copies flag a row: the bound
    tests/stats/test_row_verdicts.py checks).

    >>> d = np.array([[0.2, 0.01], [0.0, -0.01]])   # row 0: +20% in one pair only
    >>> own_copy_spreads(d, np.zeros((2, 2)), [0.01, 0.01]).round(3).tolist()
    [0.046, 0.01]
    """
    k = len(departures)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        own = np.nanvar(departures, axis=0, ddof=1) - np.nanmean(errors ** 2, axis=0)
    own = np.maximum(np.nan_to_num(own), 0.0) / k
    prior = np.asarray(prior, dtype=np.float64)
    return np.maximum(prior, np.sqrt((PRIOR_DF * prior ** 2 + (k - 1) * own)
                                     / (PRIOR_DF + k - 1)))


def _standardized(departures, errors, spreads) -> tuple:
    """Each departure over its noise (spread and own error); NaN where it has none."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.asarray(departures, float) / np.hypot(spreads, errors)
    return tuple(float(v) if np.isfinite(v) else math.nan for v in z)


def shared_movement(node_z, node_keys) -> dict:
    """Per row key, how its nodes' departures move together: the correlation of the
    standardized departures (z) of two nodes of one row, pooled over the *other* rows
    (sum over rows of (sum z)^2 - sum z^2, over sum n (n - 1); a row's own nodes left out,
    so that a real change of a whole row does not widen its own noise), in [0, 1].

    >>> z = [1.0, 1.0, -1.0, -1.0, 0.5, 0.5]
    >>> shared_movement(z, ["a", "a", "b", "b", "c", "c"])["a"]
    0.625
    """
    z = np.asarray(node_z, dtype=np.float64)
    frame = pd.DataFrame({"key": list(node_keys), "z": z, "square": z ** 2}).dropna()
    grouped = frame.groupby("key", sort=False)
    sums, squares, counts = grouped["z"].sum(), grouped["square"].sum(), grouped["z"].count()
    cross = sums ** 2 - squares
    pairs = counts * (counts - 1)
    others = (cross.sum() - cross) / (pairs.sum() - pairs).where(pairs.sum() - pairs > 0)
    return others.fillna(0.0).clip(0.0, 1.0).to_dict()


def row_spreads(noise: SessionNoise, node_durations, node_keys, row_keys,
                node_dispersion=None, node_z=None) -> np.ndarray:
    """The spread (SD of a log ratio between two copies or sessions) of each row of a view
    whose rows sum nodes (``node_keys``: each node's row; a row without nodes: NaN): the
    larger of the spread of one node of the row's whole duration and that of the sum of
    its nodes, from their own spreads s_i and shares w_i = t_i / sum t: (1 - r) sum (w_i
    s_i)^2 + r (sum w_i s_i)^2, r how the nodes of a row move together (shared_movement of
    their standardized departures ``node_z``; 0 without). A module of a few short nodes
    varies as its nodes do, a module of one long node as a long node does, a module whose
    nodes shift together (one copy's layer laid out apart) as much as they do together.
    ``node_dispersion``: the nodes' run-to-run dispersions (SessionNoise.spread_at; a
    row's: its nodes', time-weighted).

    >>> noise = SessionNoise(0.0, 0.1, 20)   # one spread, 10%, at every duration
    >>> row_spreads(noise, [1e4, 1e4, 1e4, 1e4], ["a", "b", "b", "b"], ["a", "b"]).round(3).tolist()
    [0.1, 0.1]
    """
    durations = np.asarray(node_durations, dtype=np.float64)
    keys = np.asarray(node_keys, dtype=object)
    own = np.broadcast_to(noise.spread_at(durations, node_dispersion), durations.shape)
    together = {} if node_z is None else shared_movement(node_z, node_keys)
    spreads = np.full(len(row_keys), np.nan)
    for row, key in enumerate(row_keys):
        mine = keys == key
        total = durations[mine].sum()
        if mine.any() and total > 0:
            parts = durations[mine] * own[mine] / total
            r = together.get(key, 0.0)
            summed = math.sqrt((1.0 - r) * np.sum(parts ** 2) + r * np.sum(parts) ** 2)
            jitter = (None if node_dispersion is None else
                      [np.sum(durations[mine] * np.asarray(node_dispersion)[mine]) / total])
            spreads[row] = max(float(np.max(noise.spread_at([total], jitter))), summed)
    return spreads


def judge(design: Design, control: np.ndarray, test: np.ndarray, control_groups, test_groups,
          margin: float, fdr: float, whole: bool = False, spreads=None) -> dict[str, np.ndarray]:
    """Per row (columns of the runs x rows samples on both sides): ``estimate``, ``low``,
    ``high`` (relative change and its interval, fractions, at the level
    verdict_rule.adjusted_confidence leaves: 95% for one row), ``p_value``, ``q_value``
    (Benjamini–Hochberg across the rows) and ``change`` (verdict_rule.verdicts: a
    slower/faster row changed by at least the margin itself). Rows are tested against the
    common shift of the rows (per block, or between the two sessions) and the design's
    noise, each row's own ``spreads`` where given (row_spreads); with several copies per
    side, each row's spread moderated by its own between the pairs of copies
    (own_copy_spreads). ``whole``: the rows are the whole model's run totals, tested as
    they are, over all blocks; one session per side, against the drift its node rows
    measured (``design.drift``, _single_total): slower or faster only where the change is
    not the rows' common shift, which a drift between sessions would look like too.
    """
    if whole and design.kind == "single" and design.noise is not None and design.noise.measured:
        return _single_total(design, control, test, margin, fdr)
    found = _rows(design, control, test, control_groups, test_groups, whole, spreads,
                  CONFIDENCE)
    found["q_value"] = benjamini_hochberg(found["p_value"])
    level = adjusted_confidence(found["q_value"], fdr)
    if level != CONFIDENCE:  # the intervals at the level the selection leaves
        adjusted = _rows(design, control, test, control_groups, test_groups, whole, spreads,
                         level)
        found["low"], found["high"] = adjusted["low"], adjusted["high"]
    found["change"] = verdicts(found["estimate"], found["low"], found["high"],
                               found["q_value"], margin, fdr, shift=found.pop("shift", 0.0))
    return found


def _rows(design: Design, control: np.ndarray, test: np.ndarray, control_groups,
          test_groups, whole: bool, spreads, confidence: float) -> dict[str, np.ndarray]:
    """judge()'s estimates, intervals at ``confidence`` and p-values, by design."""
    control_groups, test_groups = np.asarray(control_groups), np.asarray(test_groups)
    if design.kind == "paired":
        labels = _block_labels(control_groups, test_groups)
        control_blocks = block_values(control, control_groups, labels)
        test_blocks = block_values(test, test_groups, labels)
        durations = _durations(control_blocks)
        copy_of = copy_of_blocks(design.copies, labels)
        if copy_of is not None and not whole and design.noise is not None and design.shifts:
            prior = design.noise.spread_at(durations) if spreads is None else spreads
            spreads = own_copy_spreads(*per_copy_departures(
                control_blocks, test_blocks, design.shifts, copy_of), prior)
        return paired_rows(control_blocks, test_blocks, common=not whole,
                           confidence=confidence, durations=durations, noise=design.noise,
                           shifts=design.shifts or None, spreads=spreads)
    if design.kind == "sessions":
        return several_session_rows(block_values(control, control_groups),
                                    block_values(test, test_groups), moderate=not whole,
                                    confidence=confidence)
    noise = design.noise or single_noise(control, test)
    zeros_c, zeros_t = np.zeros(len(control)), np.zeros(len(test))
    logs = block_values(control, zeros_c)[0]
    ratios = block_values(test, zeros_t)[0] - logs
    errors = np.hypot(median_errors(control, zeros_c)[0], median_errors(test, zeros_t)[0])
    jitter = None if whole or not noise.measured else pooled_dispersion(control, test)
    return single_session_rows(ratios, errors, noise, common=not whole, confidence=confidence,
                               durations=np.exp(logs), spreads=spreads, dispersion=jitter)


def _single_total(design: Design, control: np.ndarray, test: np.ndarray, margin: float,
                  fdr: float) -> dict[str, np.ndarray]:
    """judge() of the whole model's run totals with one session per side, against the
    session noise its node rows measured (session_drift.judge_total)."""
    zeros_c, zeros_t = np.zeros(len(control)), np.zeros(len(test))
    ratio = float(block_values(test, zeros_t)[0, 0] - block_values(control, zeros_c)[0, 0])
    error = float(np.hypot(median_errors(control, zeros_c)[0, 0],
                           median_errors(test, zeros_t)[0, 0]))
    assert design.noise is not None
    found = judge_total(ratio, error, design.noise, design.drift, margin, fdr)
    columns = {key: np.array([value]) for key, value in found.items()}
    columns["q_value"] = columns["p_value"].copy()
    return columns
