"""Per-run machine noise: the profiling thread's context switches and CPU time versus wall time.

``Profile.run_noise`` is an int64 (runs, 4) array with the columns NOISE_COLUMNS, measured by
one read at each end of every timed run (pyfxprof.run.noise), never per node. A run is
*preempted* when the thread was switched out involuntarily during it (another task took its
CPU) **and** spent at least PREEMPTED_SHARE of the run's wall time off the CPU: kernel threads
(rcu_preempt, kworkers) switch a busy thread out for a few µs dozens of times a second, so
"at least one involuntary switch" marks nearly every run of tens of ms while costing it far
less than its run-to-run noise. ``stolen_ns`` = wall - CPU
time is the time the thread was not running: preemption, but also sleeping or waiting (I/O,
locks, a GPU, other threads). See docs/latency.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ArgumentError

#: Columns of ``Profile.run_noise``: counts, then ns of the profiling thread over each run.
NOISE_COLUMNS = ("involuntary_switches", "voluntary_switches", "cpu_ns", "wall_ns")
#: Share of a run's wall time the thread must have spent off the CPU (with at least one
#: involuntary switch) for the run to count as preempted.
PREEMPTED_SHARE = 0.01


def check_run_noise(value, runs: int) -> np.ndarray:
    """``value`` as an int64 (runs, len(NOISE_COLUMNS)) array, or a ValueError saying why.

    >>> check_run_noise([[0, 1, 900, 1000]], 1).dtype
    dtype('int64')
    """
    array = np.asarray(value)
    if array.shape != (runs, len(NOISE_COLUMNS)):
        raise ArgumentError(f"run_noise must have shape ({runs}, {len(NOISE_COLUMNS)}) "
                         f"(runs x {', '.join(NOISE_COLUMNS)}), got {array.shape}")
    if array.dtype.kind not in "iu":
        raise ArgumentError(f"run_noise must hold integers, got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def noise_frame(run_noise: np.ndarray) -> pd.DataFrame:
    """One row per run: NOISE_COLUMNS, stolen_ns (wall - cpu, clipped at 0: the two clocks are
    read ~1 µs apart, so small negative differences are read jitter) and preempted (bool, see
    preempted_mask).

    >>> noise_frame(np.array([[0, 0, 950, 1000], [2, 0, 500, 1000]]))[["stolen_ns", "preempted"]].values.tolist()
    [[50, False], [500, True]]
    """
    frame = pd.DataFrame(np.asarray(run_noise, dtype=np.int64), columns=list(NOISE_COLUMNS))
    frame["stolen_ns"] = (frame["wall_ns"] - frame["cpu_ns"]).clip(lower=0)
    frame["preempted"] = preempted_mask(run_noise)
    return frame


def preempted_mask(run_noise: np.ndarray) -> np.ndarray:
    """True for runs with at least one involuntary context switch and at least PREEMPTED_SHARE
    of their wall time off the CPU.

    >>> preempted_mask(np.array([[0, 0, 1, 100], [3, 0, 1, 100], [3, 0, 995, 1000]])).tolist()
    [False, True, False]
    """
    array = np.asarray(run_noise, dtype=np.int64).reshape(-1, len(NOISE_COLUMNS))
    stolen = array[:, 3] - array[:, 2]
    return (array[:, 0] > 0) & (stolen >= PREEMPTED_SHARE * array[:, 3])
