"""The post-hoc summary of a GPU profile: which nodes are launch-bound, and how busy the
device was over each run."""

from __future__ import annotations

import numpy as np


def add_device_summary(frame, host: np.ndarray, device: np.ndarray, run_totals: np.ndarray,
                       meta: dict):
    """A copy of the nodes `frame` with `launch_bound` (host median above device median);
    sets the device busy share (device time of all nodes over the run's host total) in `meta`.

    >>> import pandas as pd
    >>> meta = {}
    >>> add_device_summary(pd.DataFrame({"name": ["a", "b"]}), np.array([[9, 1]]),
    ...                    np.array([[3, 5]]), np.array([20]), meta)["launch_bound"].tolist()
    [True, False]
    >>> meta
    {'device_busy_share': 0.4}
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        busy = device.sum(axis=1) / run_totals
    meta["device_busy_share"] = float(np.median(busy)) if np.isfinite(busy).all() else None
    return frame.assign(launch_bound=np.median(host, axis=0) > np.median(device, axis=0))
