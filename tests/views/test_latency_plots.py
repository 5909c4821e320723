"""Latency figures (views/latency_plots.py): what each draws, and that each is saved."""

import numpy as np
import pytest

from pyfxprof.data.profile import Profile
from pyfxprof.errors import PyfxprofError
from pyfxprof.views.latency_plots import plot_latency, plot_tail
from tests.toy_profiles import toy_nodes


def _profile(runs=40, noise=True):
    rng = np.random.default_rng(4)
    samples = rng.integers(900, 1100, size=(runs, 4))
    samples[7, 2] += 50_000
    totals = samples.sum(axis=1) + 100
    run_noise = np.zeros((runs, 4), dtype=np.int64) if noise else None
    if noise:
        run_noise[:, 3] = totals
        run_noise[7, 0] = 1
    return Profile(toy_nodes(), samples, totals, {"model": "toy"}, run_noise=run_noise)


def test_latency_plot_marks_the_quantiles_and_the_preempted_runs(tmp_path):
    prof = _profile()
    figure = prof.plot_latency(tmp_path / "lat.png")
    cdf, hist = figure.axes
    assert len(cdf.lines) == 1 + 4                   # the CDF and p50, p90, p99, p99.9
    labels = [t.get_text() for t in hist.get_legend().get_texts()]
    assert labels[:2] == ["runs", "preempted runs"]
    assert [label.split()[0] for label in labels[2:]] == ["p50", "p90", "p99", "p99.9"]
    assert labels[-1] == f"p99.9 {prof.latency().p99_9 / 1000:.3g} µs"
    assert "too few runs for p99" in figure._suptitle.get_text()
    assert (tmp_path / "lat.png").read_bytes()[:4] == b"\x89PNG"


def test_tail_plot_has_one_bar_per_row_largest_excess_first(tmp_path):
    prof = _profile(noise=False)
    figure = plot_tail(prof, tmp_path / "tail.svg", quantile=0.9, top=3)
    axes = figure.axes[0]
    assert [t.get_text() for t in axes.get_yticklabels()][0] == "layer1_0_relu"
    assert len(axes.patches) == 3
    assert (tmp_path / "tail.svg").read_text().lstrip().startswith("<?xml")


def test_plots_refuse_an_empty_profile():
    empty = Profile(toy_nodes(), np.zeros((0, 4), dtype=np.int64), np.zeros(0, np.int64))
    with pytest.raises(PyfxprofError, match="no runs"):
        plot_latency(empty)


def test_latency_figures_render_inline_in_notebooks():
    prof = _profile()
    for figure in (prof.plot_latency(), prof.plot_tail(quantile=0.9)):
        assert figure._repr_png_()[:4] == b"\x89PNG"
