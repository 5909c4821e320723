import sys

import numpy as np
import pandas as pd
import pytest

from pyfxprof.errors import PyfxprofError
from pyfxprof.views.plot import plot, top_nodes
from pyfxprof.data.profile import Profile

pytest.importorskip("matplotlib")


def make_profile(runs=9, n=30, seed=1):
    rng = np.random.default_rng(seed)
    samples = rng.integers(1_000, 2_000_000, size=(runs, n))
    nodes = pd.DataFrame({
        "index": range(n), "name": [f"node_{i}" for i in range(n)], "op": ["call_module"] * n,
        "target": ["m"] * n, "module_path": ["m"] * n, "module_type": ["Conv2d"] * n,
        "module_stack": [("m",)] * n})
    return Profile(nodes, samples, samples.sum(axis=1), {"model": "toy", "device": "cpu"})


def test_png_written(tmp_path):
    path = tmp_path / "top.png"
    figure = make_profile().plot(path, top=5)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
    axes = figure.axes[0]
    assert len(axes.patches) == 5
    assert "toy on cpu" in axes.get_title() and "top 5 of 30" in axes.get_title()
    assert "(ms)" in axes.get_xlabel() and "IQR" in axes.get_xlabel()


def test_top_nodes_by_median_the_quantity_the_bars_draw():
    profile = make_profile()
    data = top_nodes(profile, top=3)
    order = np.argsort(-np.median(profile.samples, axis=0), kind="stable")[:3]
    assert data["labels"] == [f"node_{i}" for i in order]
    assert data["median"].tolist() == np.median(profile.samples[:, order], axis=0).tolist()
    assert (np.diff(data["median"]) <= 0).all()  # bars drawn in order, slowest first
    assert (data["p25"] <= data["median"]).all() and (data["median"] <= data["p75"]).all()


def test_bars_sorted_even_when_totals_disagree_with_medians():
    # node_0 has the larger total (one huge run), node_1 the larger median
    samples = np.array([[10_000, 200], [100, 200], [100, 200]])
    nodes = make_profile(n=2).nodes
    profile = Profile(nodes, samples, samples.sum(axis=1), {"model": "m"})
    assert top_nodes(profile, top=2)["labels"] == ["node_1", "node_0"]


def test_figure_shows_inline_without_pyplot_and_path_is_optional():
    figure = make_profile().plot(top=4)
    png = figure._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="top must be a positive int"):
        plot(make_profile(), tmp_path / "p.png", top=0)
    with pytest.raises(PyfxprofError, match="no runs"):
        plot(make_profile(runs=0), tmp_path / "p.png")
    with pytest.raises(PyfxprofError, match="cannot write .*p.nosuchformat"):
        plot(make_profile(), tmp_path / "p.nosuchformat")


def test_missing_matplotlib_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(PyfxprofError, match="plotting needs matplotlib: pip install matplotlib"):
        plot(make_profile(), tmp_path / "p.png")
