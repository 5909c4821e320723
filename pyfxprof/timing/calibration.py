"""Measuring what one mark adds to a measured interval, so it can be subtracted from every node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.fx as fx

from .. import _C
from .recorder import RECORDER, Records


@dataclass(frozen=True)
class Calibration:
    """Cost of an empty interval between two marks, in ns.

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


def summarise(intervals: np.ndarray, method: str) -> Calibration:
    """A Calibration from measured empty intervals (interquartile mean, IQR, count)."""
    q25, q75 = np.percentile(intervals, [25, 75])
    central = intervals[(intervals >= q25) & (intervals <= q75)]
    return Calibration(float(central.mean()), float(q75 - q25), int(intervals.size), method)


def _empty_marks_module(first_id: int, marks: int, mark: Callable) -> fx.GraphModule:
    """A GraphModule that only calls mark first_id..first_id+marks-1, generated like codegen's."""
    graph = fx.Graph()
    x = graph.placeholder("x")
    for k in range(marks):
        graph.call_function(mark, (first_id + k,))
    graph.output(x)
    return fx.GraphModule(torch.nn.Module(), graph, "MarkCalibration")


def calibrate_codegen(marks: int = 64, repeats: int = 200, mark: Callable = _C.mark) -> Calibration:
    """Interval between consecutive marks in generated code with nothing in between.

    With `mark=_C.mark_cuda` the CUDA event record is part of the measured cost (and the
    events are discarded after each repeat).

    Example:
        >>> 0 < calibrate_codegen(marks=8, repeats=10).overhead_ns < 10_000
        True
    """
    first_id = RECORDER.allocate(marks)
    module = _empty_marks_module(first_id, marks, mark)
    for _ in range(repeats):
        module(None)
        if mark is not _C.mark:
            _C.cuda_discard()
    records = RECORDER.collect(first_id, marks)
    return summarise(consecutive_intervals(records, marks), "codegen: empty interval")


def calibrate_paired(repeats: int = 5000) -> Calibration:
    """Median interval of `mark(a); mark(b)` from Python, as the interpreter times each node.

    Example:
        >>> 0 < calibrate_paired(repeats=100).overhead_ns < 10_000
        True
    """
    first_id = RECORDER.allocate(2)
    mark, second_id = _C.mark, first_id + 1
    for _ in range(repeats):
        mark(first_id)
        mark(second_id)
    records = RECORDER.collect(first_id, 2)
    return summarise(consecutive_intervals(records, 2), "interpreter: empty begin/end pair")


def consecutive_intervals(records: Records, marks_per_run: int) -> np.ndarray:
    """Differences of consecutive timestamps within each group of `marks_per_run` records."""
    usable = len(records) - len(records) % marks_per_run
    stamps = records.timestamp_ns[:usable].reshape(-1, marks_per_run)
    intervals = np.diff(stamps, axis=1).ravel()
    if intervals.size == 0:
        raise RuntimeError("mark calibration recorded nothing: is the record buffer full?")
    return intervals
