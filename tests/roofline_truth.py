"""The truths the roofline's known-truth tests bound a node by (tests/test_roofline.py): this
machine's peaks measured in the test, in rounds interleaved with short profiles of the node,
so that the node and its roof are measured close in time and by the same statistic (a
median), whatever the load of the shared machine does between rounds."""

from __future__ import annotations

import functools

import numpy as np
import torch

import pyfxprof
from pyfxprof.run.first_touch import first_touch_threshold
from pyfxprof.run.machine_peaks import (gemm_size, gemm_trial, measure_peaks, seconds_of,
                                        triad_arrays, triad_trial)

CPU = torch.device("cpu")


def float32_peaks() -> dict:
    """This machine's float32 peaks (measure_peaks) at torch's current thread count, measured
    once per thread count in this process, in the test session (never a stored constant):
    the fixed costs and first-touch threshold the rounds keep, the roofs of the tests that
    do not bound an efficiency."""
    return _measured_at(torch.get_num_threads())


@functools.cache
def _measured_at(threads: int) -> dict:
    """float32_peaks measured at `threads` (the cache's key)."""
    return measure_peaks(CPU, (torch.float32,))


def _probes(kept: list) -> tuple[dict, dict]:
    """The calls timed around each profile ({name: call}) and the work each does: a
    float32 GEMM of the peaks' size (FLOPs), the triad into a kept output (bytes), the
    triad into a fresh output appended to `kept` (its output's bytes, for the first
    touch)."""
    n = gemm_size(torch.float32, CPU)
    b, c = triad_arrays(CPU)
    triad, moved = triad_trial((b, c))
    return ({"gemm": gemm_trial(torch.float32, CPU, n), "triad": triad,
             "fresh": lambda: kept.append(torch.add(b, c, alpha=3.0))},
            {"gemm": 2.0 * n ** 3, "triad": moved, "fresh": 4 * b.numel()})


def _probe_seconds(calls: dict, kept: list, trials: int) -> dict[str, list[float]]:
    """Seconds of `trials` rounds of every probe in turn, `kept` cleared after each call
    (a fresh output freed outside the timed call, as a model frees its outputs later)."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(trials):
        for name, call in calls.items():
            times[name].append(seconds_of(call, CPU))
            kept.clear()
    return times


def _round_peaks(peaks: dict, seconds: dict, work: dict, touched: bool) -> dict:
    """`peaks` with the rates of one round's probes (their median seconds): the float32
    GEMM rate, the triad bandwidth and, where fresh triad outputs are mapped anew
    (`touched`), the first touch per byte."""
    median = {name: float(np.median(times)) for name, times in seconds.items()}
    touch = max(median["fresh"] - median["triad"], 0.0) * 1e9 / work["fresh"]
    return {**peaks, "flops": {"float32": work["gemm"] / median["gemm"]},
            "bandwidth": work["triad"] / median["triad"],
            "first_touch_ns_per_byte": touch if touched else 0.0}


def interleaved_rooflines(model, inputs: tuple, rounds: int = 5, runs: int = 6,
                          trials: int = 2) -> list:
    """The roofline of `model` on `inputs` in each of `rounds` rounds: `trials` of each
    probe (_probes), a profile of `runs` runs, `trials` more of each probe, the round's
    roofline against the round's peaks (_round_peaks; fixed costs and the first-touch
    threshold from float32_peaks)."""
    peaks = float32_peaks()
    threshold = first_touch_threshold(CPU)
    kept: list = []
    calls, work = _probes(kept)
    touched = threshold is not None and work["fresh"] >= threshold
    frames = []
    with torch.inference_mode():
        _probe_seconds(calls, kept, trials=1)  # untimed: each probe's first call
        for _ in range(rounds):
            before = _probe_seconds(calls, kept, trials)
            prof = pyfxprof.profile(model, inputs, runs=runs, warmup=1, progress=False)
            after = _probe_seconds(calls, kept, trials)
            seconds = {name: before[name] + after[name] for name in calls}
            frames.append(prof.roofline(peaks=_round_peaks(peaks, seconds, work, touched)))
    return frames
