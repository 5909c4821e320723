"""Tests of the generation latency summary (pyfxprof.loop.generation) on hand-made call logs."""

import math

import numpy as np

from pyfxprof.loop.generation import CallLog, format_latency, generation_latency


def _log(starts, ends, single, cost=0.0, paused=None, sequence=None, first=(0,)):
    n = len(starts)
    return CallLog(np.array(starts), np.array(ends), np.array(single, bool), np.full(n, cost),
                   np.zeros(n) if paused is None else np.array(paused),
                   np.arange(n) if sequence is None else np.array(sequence),
                   np.isin(np.arange(n), first))


def test_prefill_duration_and_decode_end_to_end_intervals():
    # prefill 0..100; decode steps end at 140, 200, 230: 40, 60, 30 ns per token
    found = generation_latency(_log([0, 120, 180, 210], [100, 140, 200, 230],
                                    [False, True, True, True]))
    assert found["generations"] == 1
    assert found["ttft_ns"] == {"count": 1, "mean": 100.0, "median": 100.0, "p90": 100.0,
                                "p99": 100.0}
    decode = found["decode_ns"]
    assert decode["count"] == 3 and decode["median"] == 40.0 and decode["mean"] == 130 / 3
    assert decode["p90"] == 56.0  # numpy's linear interpolation: 40 + 0.8 * 20


def test_each_multi_token_call_starts_a_generation_and_so_does_the_blocks_first_call():
    found = generation_latency(_log([0, 20, 40, 60, 80], [10, 30, 50, 70, 90],
                                    [True, True, False, True, True]))
    assert found["generations"] == 2  # a one-token prompt first, then an 8-token one
    assert found["ttft_ns"]["median"] == 10.0 and found["decode_ns"]["count"] == 3
    assert found["decode_ns"]["median"] == 20.0


def test_a_decode_step_after_an_unrecorded_call_is_left_out():
    # calls 0, 1 recorded; 2, 3 ran in NONE steps; 4, 5 recorded again (mid-generation)
    found = generation_latency(_log([0, 20, 1000, 1020], [10, 30, 1010, 1030],
                                    [False, True, True, True], sequence=[0, 1, 4, 5]))
    assert found["generations"] == 1 and found["decode_ns"]["count"] == 2
    assert found["decode_ns"]["median"] == 20.0  # the 980 ns gap over calls 2-3 is not a step


def test_instrumentation_cost_and_capture_pauses_are_subtracted():
    found = generation_latency(_log([0, 1000], [100, 1050], [False, True], cost=5.0,
                                    paused=[0, 800]))
    assert found["ttft_ns"]["median"] == 95.0
    assert found["decode_ns"]["median"] == 1050 - 100 - 5 - 800


def test_an_empty_log_gives_nan_summaries():
    found = generation_latency(_log([], [], []))
    assert found["generations"] == 0 and found["decode_ns"]["count"] == 0
    assert math.isnan(found["ttft_ns"]["median"])
    assert format_latency(found).endswith("per-token decode latency: no decode step")


def test_format_names_the_quantiles_and_the_rate():
    text = format_latency(generation_latency(_log([0, 2_000_000, 3_000_000],
                                                  [1_500_000, 2_500_000, 3_500_000],
                                                  [False, True, True])))
    assert text.splitlines() == [
        "time to first token: 1.50 ms (1 prefill)",
        "per-token decode latency: median 1.00 ms, p90 1.00 ms, p99 1.00 ms over 2 tokens "
        "(1000 tokens/s)"]
