"""The post-hoc summary of a GPU profile: which nodes are launch-bound, and how busy the
device was over each run."""

from __future__ import annotations

import numpy as np


#: CUDA events resolve time to about half a microsecond (cudaEventElapsedTime's documented
#: resolution): a node whose device median is shorter is flagged, its device time being noise.
EVENT_RESOLUTION_NS = 500


def add_device_summary(frame, host: np.ndarray, device: np.ndarray, run_totals: np.ndarray,
                       meta: dict):
    """A copy of the nodes `frame` with `launch_bound` (host median above device median) and
    `below_resolution` (device median under EVENT_RESOLUTION_NS, but not 0: a host-only row);
    sets the device busy share (device time of all nodes over the run's host total) and the
    count of nodes below the resolution in `meta`.

    >>> import pandas as pd
    >>> meta = {}
    >>> frame = add_device_summary(pd.DataFrame({"name": ["a", "b"]}), np.array([[9, 1]]),
    ...                            np.array([[300, 5000]]), np.array([20000]), meta)
    >>> frame["launch_bound"].tolist(), frame["below_resolution"].tolist()
    ([False, False], [True, False])
    >>> meta
    {'device_busy_share': 0.265, 'device_below_resolution': 1}
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        busy = device.sum(axis=1) / run_totals
    meta["device_busy_share"] = float(np.median(busy)) if np.isfinite(busy).all() else None
    device_median = np.median(device, axis=0)
    below = (device_median > 0) & (device_median < EVENT_RESOLUTION_NS)
    meta["device_below_resolution"] = int(below.sum())
    return frame.assign(launch_bound=np.median(host, axis=0) > device_median,
                        below_resolution=below)
