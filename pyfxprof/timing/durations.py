"""RunTimings: the durations (ns) of the complete runs an executor hands over."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RunTimings:
    """Durations (ns) of the complete runs found, raw until Calibration.correct() is applied.

    Example:
        >>> RunTimings(np.zeros((2, 3), np.int64), np.zeros(2, np.int64), np.zeros(2, np.int64),
        ...            0).intervals.shape
        (2, 3)
    """

    intervals: np.ndarray    # int64 (runs, n): each node's duration
    run_totals: np.ndarray   # int64 (runs,): the run's begin to end
    run_starts: np.ndarray   # int64 (runs,): when each run began, on the profiler clock
    incomplete_runs: int     # runs that raised or missed a node, left out
    between_nodes: np.ndarray | None = None  # int64 (runs,): time no node's interval covers
    between_graphs: np.ndarray | None = None  # int64 (runs,): timing.graph_spans, several graphs
    spare: np.ndarray | None = None  # int64 (runs, n + k): intervals are its first n columns
