"""Tests of views.roofline_plot and Profile.plot(kind=...) on a hand-built profile: the roofs
at the peaks, one point per node with FLOPs sized by its time, the slowest labelled."""

import numpy as np
import pytest

from pyfxprof.errors import PyfxprofError
from tests.data.test_roofline import ROWS, SAMPLES, node, toy_profile


def test_roofs_points_and_labels(tmp_path):
    profile = toy_profile(ROWS + [node("view", "view")], np.hstack([SAMPLES, SAMPLES[:, :1]]))
    figure = profile.plot(tmp_path / "r.png", kind="roofline", top=2)
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    axes = figure.axes[0]
    texts = [text.get_text() for text in axes.texts]
    assert "float32 GEMM 100 GFLOP/s" in texts and "triad 10 GB/s" in texts
    assert "bfloat16 GEMM 400 GFLOP/s" not in texts  # no node ran in bfloat16
    assert [t for t in texts if " (" in t and "GEMM" not in t] == ["mm (4.00 ms)",
                                                                    "add (2.40 ms)"]
    points = np.vstack([collection.get_offsets() for collection in axes.collections])
    assert len(points) == 3  # view has no FLOPs: not drawn, said in the title
    assert "1 without FLOPs not drawn" in axes.get_title()
    roof = [line for line in axes.lines if min(line.get_ydata()) == 1e11]  # the flat roof
    assert roof and min(roof[0].get_xdata()) == pytest.approx(10.0)  # the ridge: 1e11 / 1e10


def test_plot_kinds_are_checked_and_peaks_needed():
    with pytest.raises(PyfxprofError, match="kind must be one of 'nodes', 'roofline'"):
        toy_profile(ROWS, SAMPLES).plot(kind="pie")
    with pytest.raises(PyfxprofError, match="machine_peaks"):
        toy_profile(ROWS, SAMPLES, peaks=None).plot(kind="roofline")
