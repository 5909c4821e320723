"""Calibration and overhead subtraction, in one place: what a timed call (or a hooked call)
adds to the interval it measures, and its removal from every node and run total."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.fx as fx

from .native import _C
from .durations import RunTimings


@dataclass(frozen=True)
class Calibration:
    """Cost a timer adds to the interval it measures, in ns.

    `overhead_ns` is the interquartile mean (mean of the samples between the 25th and 75th
    percentiles): robust to preemption outliers like the median, but not quantised to the
    clock's step (about 10 ns on some VMs' TSC) the way a median is.
    """

    overhead_ns: float
    iqr_ns: float
    samples: int
    method: str

    def as_meta(self) -> dict:
        """The calibration as Profile metadata."""
        return {"overhead_ns": self.overhead_ns, "overhead_iqr_ns": self.iqr_ns,
                "overhead_samples": self.samples, "overhead_method": self.method}

    def correct(self, timings: RunTimings, calls_per_run: int) -> RunTimings:
        """`timings` with the overhead subtracted from every node and `calls_per_run` times
        from every run total (rounded, clamped at 0), in place: no copy of the samples.

        Example:
            >>> t = RunTimings(np.array([[130, 80]]), np.array([300]), np.array([0]), 0)
            >>> c = Calibration(30.0, 0.0, 1, "test").correct(t, 3)
            >>> c.intervals.tolist(), c.run_totals.tolist()
            ([[100, 50]], [210])
        """
        subtract_overhead(timings.intervals, self.overhead_ns)
        totals = np.rint(timings.run_totals - calls_per_run * self.overhead_ns)
        timings.run_totals = np.clip(totals, 0, None).astype(np.int64)
        return timings


def subtract_overhead(samples: np.ndarray, overhead_ns: float) -> np.ndarray:
    """`samples` (int64) minus `overhead_ns` rounded, clamped at 0, in place.

    Example:
        >>> subtract_overhead(np.array([[130, 20]]), 29.6).tolist()
        [[100, 0]]
    """
    np.subtract(samples, int(round(overhead_ns)), out=samples)
    np.maximum(samples, 0, out=samples)
    return samples


def summarise(intervals: np.ndarray, method: str) -> Calibration:
    """A Calibration from measured empty intervals (interquartile mean, IQR, count)."""
    if intervals.size == 0:
        raise RuntimeError("calibration measured nothing")
    q25, q75 = np.percentile(intervals, [25, 75])
    central = intervals[(intervals >= q25) & (intervals <= q75)]
    return Calibration(float(central.mean()), float(q75 - q25), int(intervals.size), method)


def consecutive_intervals(records, marks_per_run: int) -> np.ndarray:
    """Differences of consecutive timestamps within each group of `marks_per_run` records.

    Example:
        >>> from types import SimpleNamespace
        >>> consecutive_intervals(SimpleNamespace(timestamp_ns=np.array([0, 5, 7, 10])), 2)
        array([5, 3])
    """
    stamps = records.timestamp_ns
    usable = len(stamps) - len(stamps) % marks_per_run
    intervals = np.diff(stamps[:usable].reshape(-1, marks_per_run), axis=1).ravel()
    if intervals.size == 0:
        raise RuntimeError("mark calibration recorded nothing: is the record buffer full?")
    return intervals


def _empty_calls_module(table: "_C.SampleTable", calls: int) -> fx.GraphModule:
    """Generated code timing `calls` calls of the empty C function _C._noop, as instrumented
    graphs call their nodes: timed(k, k)."""
    graph = fx.Graph()
    x = graph.placeholder("x")
    timed_calls = _C.timed_calls(table)
    for k in range(calls):
        timed_calls.set(k, _C._noop)
        graph.call_function(timed_calls.timed, (k, k))
    graph.output(x)
    return fx.GraphModule(torch.nn.Module(), graph, "TimedCallsCalibration")


def calibrate_timed_calls(calls: int = 64, repeats: int = 200) -> Calibration:
    """What a timed call measures of itself: its duration around an empty C function.

    Example:
        >>> 0 < calibrate_timed_calls(calls=8, repeats=10).overhead_ns < 10_000
        True
    """
    table = _C.SampleTable(calls)
    table.reserve(repeats)
    module = _empty_calls_module(table, calls)
    for _ in range(repeats):
        table.begin_run()
        module(None)
        table.end_run()
    samples = table.take()["samples"].ravel()
    return summarise(samples[samples >= 0], "timed call around an empty C function")
