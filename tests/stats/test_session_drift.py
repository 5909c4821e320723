"""The whole model's verdict with one session per side (stats/session_drift.py) on generated
sessions with known changes: a change of some rows is slower, a common shift of every row
(what a drift between sessions looks like) is never judged, an unchanged rerun passes."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyfxprof.stats.row_verdicts import Design, judge, with_node_noise
from pyfxprof.stats.session_drift import judge_total, total_drift
from pyfxprof.stats.session_tests import SessionNoise

#: Rows of the generated model: two long nodes (300 us) and eleven short ones (3-15 us).
DURATIONS = np.array([300e3, 300e3] + list(np.linspace(3e3, 15e3, 11)))
RUNS = 30


def sessions(seed: int, factors=1.0, drift: float = 0.0, row_spread: float = 0.02):
    """(control, test) runs x rows of one model in two sessions: the test's rows times
    `factors` (the change), the whole test session exp(drift) slower, each row of each
    session off by `row_spread` (log SD) of its own, 3% run-to-run noise."""
    rng = np.random.default_rng(seed)
    made = []
    for factor, shift in ((1.0, 0.0), (np.asarray(factors), drift)):
        level = DURATIONS * factor * math.exp(shift) * rng.lognormal(0, row_spread, len(DURATIONS))
        made.append(level * rng.lognormal(0.0, 0.03, (RUNS, len(DURATIONS))))
    return made


def total_verdict(control, test, margin=0.05):
    groups = np.zeros(RUNS)
    design = with_node_noise(Design("single"), control, test, groups, groups)
    found = judge(design, control.sum(axis=1, keepdims=True), test.sum(axis=1, keepdims=True),
                  groups, groups, margin, 0.05, whole=True)
    return found["change"][0], found


def doubled(row: int) -> np.ndarray:
    factors = np.ones(len(DURATIONS))
    factors[row] = 2.0
    return factors


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10 ** 6), row=st.sampled_from([0, 1]),
       drift=st.floats(-0.03, 0.03))
def test_a_long_node_doubled_is_slower_whatever_the_drift(seed, row, drift):
    change, found = total_verdict(*sessions(seed, doubled(row), drift))
    assert change == "+"
    assert found["low"][0] > 0.05   # the interval printed agrees with the verdict


def test_a_common_shift_of_every_row_is_judged_in_at_most_one_in_a_hundred():
    """Every row shifted alike by 10-50%: a change of the whole model or a drift between
    sessions, which one session per side cannot tell apart: unresolved, but for chance
    departures of the long rows from the short ones (at most 2 of 200 seeded cases)."""
    rng = np.random.default_rng(1)
    cases = [(int(seed), rng.uniform(0.1, 0.5) * rng.choice([1, -1]))
             for seed in rng.integers(0, 10 ** 6, 200)]
    found = [total_verdict(*sessions(seed, drift=shift)) for seed, shift in cases]
    assert sum(change in ("+", "-") for change, _ in found) <= 2
    assert all(abs(out["estimate"][0]) > 0.05 for _, out in found)


def test_long_rows_slower_by_a_fifth_never_pass():
    """Both long rows +20%, the short ones unchanged: never passed (slower, or unresolved at
    +5% or more: what the gate does not pass) in 20 of 20. Mostly unresolved: the departure
    the two long rows share from the short rows is also what the drift of their kind between
    two sessions looks like (a matmul and Python dispatch slow by different factors: a log
    SD of 0.15 between quiet sessions of bench_gate's model, benchmarks/README.md)."""
    factors = np.where(DURATIONS > 100e3, 1.2, 1.0)
    found = [total_verdict(*sessions(seed, factors, drift=0.01)) for seed in range(20)]
    assert all(change == "+" or (change == "?" and out["estimate"][0] >= 0.05)
               for change, out in found)


def test_unchanged_reruns_pass_the_gate():
    """Slower, or unresolved at 5% or more (what the gate does not pass), in at most 1 of
    20 unchanged reruns 1% apart as a whole."""
    found = [total_verdict(*sessions(seed, drift=0.01)) for seed in range(20)]
    failed = [change == "+" or (change == "?" and out["estimate"][0] >= 0.05)
              for change, out in found]
    assert sum(failed) <= 1
    assert [change for change, _ in found].count("-") <= 1


def test_judge_total_refuses_a_departure_against_its_own_change():
    """Rows +30% as a whole, the model +10%: less than the shift explains, never slower."""
    out = judge_total(math.log(1.1), 0.001, SessionNoise(math.log(1.3), 0.01, 12), 0.005,
                      0.05, 0.05)
    assert out["p_value"] == 1.0 and out["change"] == "?"


@pytest.mark.parametrize("spreads, expected", [([0.1, 0.1], 0.1 / math.sqrt(2)),
                                               ([0.1, np.nan], 0.1), ([np.nan], math.nan)])
def test_total_drift_weights_rows_by_their_time(spreads, expected):
    got = total_drift([5.0] * len(spreads), spreads)
    assert got == pytest.approx(expected, nan_ok=True)
