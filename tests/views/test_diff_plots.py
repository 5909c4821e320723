import pytest
from matplotlib.colors import to_hex

from pyfxprof.analyses.diff import diff
from pyfxprof.views.diff_plots import visualize_counts_diff, visualize_duration_diff
from pyfxprof.errors import PyfxprofError

from tests.analyses.test_diff import control_and_test

PNG_MAGIC = b"\x89PNG"


@pytest.fixture(scope="module")
def result():
    return diff(*control_and_test(), labels=("main", "pr"))


def test_duration_plot_is_written(result, tmp_path):
    path = tmp_path / "duration.png"
    figure = visualize_duration_diff(result.changes(), path, top=4)
    assert path.read_bytes()[:4] == PNG_MAGIC and path.stat().st_size > 1000
    sides, difference = figure.axes
    assert [t.get_text() for t in sides.get_legend().get_texts()] == ["main", "pr"]
    labels = [t.get_text() for t in sides.get_yticklabels()]
    assert labels == ["layer1.0.conv1", "bn1", "new_pool", "head.fc"]  # each name once
    assert difference.get_xlabel() == "pr − main (µs)"
    colors = [to_hex(bar.get_facecolor()) for bar in difference.patches]
    # slower, fused (faster), added (slower), noisy but not significant
    assert colors == [to_hex(c) for c in ("tab:red", "tab:green", "tab:red", "tab:gray")]
    assert "no significance test" not in figure.texts[0].get_text()


def test_legend_sits_above_the_bars(result):
    figure = visualize_duration_diff(result.changes(), top=4)
    figure.canvas.draw()
    sides = figure.axes[0]
    legend_box = sides.get_legend().get_window_extent()
    assert legend_box.y0 >= sides.get_window_extent().y1 - 1  # outside the plotting area


def test_too_few_runs_for_a_test_gives_grey_bars_and_says_so():
    control, test = control_and_test()
    few = diff(control, test, min_runs=max(control.n_runs, test.n_runs) + 1)
    figure = visualize_duration_diff(few.changes(), top=4)
    colors = {to_hex(bar.get_facecolor()) for bar in figure.axes[1].patches}
    assert colors == {to_hex("tab:gray")}
    assert "no significance test" in figure.texts[0].get_text()


def test_counts_plot_is_written(result, tmp_path):
    path = tmp_path / "counts.png"
    figure = visualize_counts_diff(result.changes(by="op"), path)
    assert path.read_bytes()[:4] == PNG_MAGIC and path.stat().st_size > 1000
    assert [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["call_module"]


def test_no_differences_still_gives_a_figure(tmp_path):
    same = diff(*control_and_test()[:1] * 2)
    path = tmp_path / "none.png"
    figure = visualize_counts_diff(same.changes(), path)
    assert path.stat().st_size > 0 and figure.axes == []
    assert visualize_duration_diff(same.changes()) is not None  # no path: nothing written


def test_bad_input_is_refused(result, tmp_path):
    with pytest.raises(ValueError, match="missing columns"):
        visualize_duration_diff(result.changes()[["change"]])
    with pytest.raises(ValueError, match="top must be a positive int"):
        visualize_duration_diff(result.changes(), top=0)
    with pytest.raises(PyfxprofError, match="cannot write plot"):
        visualize_duration_diff(result.changes(), tmp_path / "no" / "dir.png")
