"""Tests of data.device_summary: launch-bound nodes and the device busy share, by hand."""

import numpy as np
import pandas as pd

from pyfxprof.data.device_summary import add_device_summary


def test_launch_bound_and_busy_share():
    frame = pd.DataFrame({"name": ["a", "b"]})
    host = np.array([[10, 2], [12, 2], [11, 2]])
    device = np.array([[4, 6], [4, 6], [5, 7]])
    meta = {}
    out = add_device_summary(frame, host, device, np.array([20, 20, 40]), meta)
    assert out["launch_bound"].tolist() == [True, False] and "launch_bound" not in frame
    assert meta["device_busy_share"] == 0.5   # medians of 10/20, 10/20, 12/40


def test_busy_share_is_none_when_a_run_total_is_zero():
    meta = {}
    add_device_summary(pd.DataFrame({"name": ["a"]}), np.array([[1]]), np.array([[1]]),
                       np.array([0]), meta)
    assert meta["device_busy_share"] is None
