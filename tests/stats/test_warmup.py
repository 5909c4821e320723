"""Warm-up detection (stats/warmup.py) on hand-made sequences: MSER's cut, lone spikes,
settling."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyfxprof.errors import ArgumentError
from pyfxprof.stats.warmup import MIN_RUNS, SETTLED_RUNS, settled, warmup_runs


def test_steady_noisy_runs_have_no_warmup():
    rng = np.random.default_rng(3)
    for _ in range(20):
        assert warmup_runs(rng.normal(1e6, 2e4, size=40))[0] == 0


def test_a_slow_start_is_found_even_with_a_late_spike():
    values = np.r_[[5e6] * 6, np.full(30, 1e6)]
    values[20] = 9e6
    assert warmup_runs(values)[0] == 6


def test_a_spike_just_after_the_warmup_does_not_extend_it():
    values = np.r_[[5e6] * 9, [1e6] * 3, [8e6], np.full(20, 1e6)]
    assert warmup_runs(values)[0] == 9


def test_a_short_slow_start_before_slightly_rising_steady_runs_is_found():
    # Seen when the machine had preempted 6 of 14 warm-up runs: 4 slow runs left, then steady
    # runs creeping up ~5%. MSER cut at 14 (the cheap early steady runs looked like a transient)
    # and the slow start was missed ("0 of the 14 untimed warm-up runs were slow").
    values = [3199, 3268, 3368, 3276, 300, 303, 295, 326, 297, 298, 292, 300, 279, 299, 323, 307,
              319, 305, 328, 312, 306, 336, 307, 298, 312, 310, 321, 301, 318, 319, 303, 312, 302,
              333, 303, 305, 299, 307]
    assert warmup_runs(values)[0] == 4


def test_too_few_runs_and_a_single_slow_first_run():
    assert warmup_runs([9, 1, 1])[0] == 0
    assert warmup_runs([50, 10, 10, 11, 10, 9, 10, 10])[0] == 1


def test_a_huge_late_spike_does_not_hide_the_warmup():
    values = np.r_[[950e3] * 7, np.full(30, 312e3)]
    values[20] = 12.3e6                    # a run the machine took away (not seen as preempted)
    assert warmup_runs(values)[0] == 7


def test_runs_have_settled_once_the_latest_three_are_within_the_noise_of_steady_runs():
    slow_then_steady = [5e6, 4e6, 3e6] + [1e6] * 4
    assert [settled(slow_then_steady[:n]) for n in range(1, 8)] == [False] * 6 + [True]
    rng = np.random.default_rng(5)  # steady runs, 1% noise: settled at the first chance
    assert all(settled(rng.normal(1e6, 1e4, size=4)) for _ in range(20))


def test_runs_still_getting_faster_or_with_a_slow_latest_run_have_not_settled():
    assert not settled([5e6, 4e6, 3e6, 1e6])              # still getting faster
    assert not settled([9e6, 8e6, 7e6, 6e6, 1e6])         # the latest run is far faster
    assert not settled([1e6, 1e6, 1e6, 1e6, 1e6, 4e6])  # ... or far slower
    assert settled([1e6, 1e6, 1e6, 1e6, 1e6, 4e6, 1e6, 1e6, 1e6])  # a spike, then steady
    assert settled([5e6] * 4)  # still slow from the start: nothing faster came yet


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(runs=st.one_of(st.integers(0, 40), st.integers(41, 100_000)), slow=st.integers(0, 30),
       seed=st.integers(0, 2**32), base=st.sampled_from([0, 1, 10**6, 10**15]))
def test_a_slow_start_is_found_at_every_size_and_steady_runs_have_none(runs, slow, seed, base):
    """Runs 1% noisy around `base` ns (ties and zeros when base is 0 or 1; 1e15 ns), the first
    `slow` of them 10x slower: as many warm-up runs found, none when there is no slow start."""
    rng = np.random.default_rng(seed)
    values = np.round(base + base * 0.01 * rng.standard_normal(runs))
    slow = min(slow, runs // 4)  # a warm-up is at most a quarter of the runs here
    values[:slow] = 10 * max(base, 1) + values[:slow]
    assert int(warmup_runs(values)[0]) == (slow if runs >= MIN_RUNS else 0)
    if runs >= MIN_RUNS + SETTLED_RUNS:
        assert settled(values) == (slow <= runs - SETTLED_RUNS - 1)


@pytest.mark.parametrize("bad", [[1.0, 2.0, np.nan, 3.0, 4.0], [np.inf] * 5])
def test_nan_and_infinite_run_times_are_refused(bad):
    with pytest.raises(ArgumentError, match="finite"):
        warmup_runs(bad)
