"""Per-run machine noise: the profiling thread's context switches and CPU time versus wall time.

``Profile.run_noise`` is an int64 (runs, 4) array with the columns NOISE_COLUMNS, measured by
one read at each end of every timed run (pyfxprof.run.noise), never per node. A run is
*preempted* when the thread was switched out involuntarily at least once during it (another
task took its CPU). ``stolen_ns`` = wall - CPU time is the time the thread was not running:
preemption, but also sleeping or waiting (I/O, locks, a GPU, other threads). See docs/latency.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Columns of ``Profile.run_noise``: counts, then ns of the profiling thread over each run.
NOISE_COLUMNS = ("involuntary_switches", "voluntary_switches", "cpu_ns", "wall_ns")


def check_run_noise(value, runs: int) -> np.ndarray:
    """``value`` as an int64 (runs, len(NOISE_COLUMNS)) array, or a ValueError saying why.

    >>> check_run_noise([[0, 1, 900, 1000]], 1).dtype
    dtype('int64')
    """
    array = np.asarray(value)
    if array.shape != (runs, len(NOISE_COLUMNS)):
        raise ValueError(f"run_noise must have shape ({runs}, {len(NOISE_COLUMNS)}) "
                         f"(runs x {', '.join(NOISE_COLUMNS)}), got {array.shape}")
    if array.dtype.kind not in "iu":
        raise ValueError(f"run_noise must hold integers, got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def noise_frame(run_noise: np.ndarray) -> pd.DataFrame:
    """One row per run: NOISE_COLUMNS, stolen_ns (wall - cpu, clipped at 0: the two clocks are
    read ~1 µs apart, so small negative differences are read jitter) and preempted (bool).

    >>> noise_frame(np.array([[0, 0, 950, 1000], [2, 0, 500, 1000]]))[["stolen_ns", "preempted"]].values.tolist()
    [[50, False], [500, True]]
    """
    frame = pd.DataFrame(np.asarray(run_noise, dtype=np.int64), columns=list(NOISE_COLUMNS))
    frame["stolen_ns"] = (frame["wall_ns"] - frame["cpu_ns"]).clip(lower=0)
    frame["preempted"] = frame["involuntary_switches"] > 0
    return frame


def preempted_mask(run_noise: np.ndarray) -> np.ndarray:
    """True for runs with at least one involuntary context switch.

    >>> preempted_mask(np.array([[0, 0, 1, 1], [3, 0, 1, 1]])).tolist()
    [False, True]
    """
    return np.asarray(run_noise)[:, 0] > 0
