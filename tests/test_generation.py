"""Tests of the generation latency summary (pyfxprof.run.generation) on hand-made call logs."""

import math

import numpy as np

from pyfxprof.run.generation import CallLog, format_latency, generation_latency


def _log(starts, ends, single, cost=0.0, paused=None):
    n = len(starts)
    return CallLog(np.array(starts), np.array(ends), np.array(single, bool), np.full(n, cost),
                   np.zeros(n) if paused is None else np.array(paused))


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


def test_each_multi_token_call_starts_a_generation_and_the_first_call_always_does():
    found = generation_latency(_log([0, 20, 40, 60, 80], [10, 30, 50, 70, 90],
                                    [True, True, False, True, True]))
    assert found["generations"] == 2
    assert found["ttft_ns"]["median"] == 10.0 and found["decode_ns"]["count"] == 3
    assert found["decode_ns"]["median"] == 20.0


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
