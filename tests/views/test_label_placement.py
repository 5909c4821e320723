"""Tests of views.label_placement: labels of clustered points overlap neither one another nor
the texts already on the axes, stay inside the axes, and keep a leader line to their point
when moved away from it."""

import numpy as np
import pytest
from matplotlib.text import Text

from pyfxprof.views.figures import matplotlib_figure
from pyfxprof.views.label_placement import place_labels


def axes_with(points: np.ndarray):
    Figure, Canvas = matplotlib_figure()
    figure = Figure(figsize=(9.0, 6.0))
    Canvas(figure)
    axes = figure.add_subplot()
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.scatter(points[:, 0], points[:, 1])
    axes.annotate("a roof label", (points[:, 0].max(), points[:, 1].max()), ha="right")
    figure.canvas.draw()
    return figure, axes


def boxes(figure, texts):
    renderer = figure.canvas.get_renderer()
    return [Text.get_window_extent(text, renderer) for text in texts]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("count, spread", [(10, 0.05), (10, 1.0), (20, 0.3), (5, 0.0)])
def test_labels_of_clustered_points_do_not_overlap_and_stay_inside(seed, count, spread):
    points = 10 ** (np.random.default_rng(seed).normal(0, spread, (count, 2)) + [1, 9])
    figure, axes = axes_with(points)
    notes = place_labels(axes, [((x, y), f"node_{i} (1.{i} ms)")
                                for i, (x, y) in enumerate(points)], fontsize=7)
    placed = boxes(figure, notes)
    inside = axes.get_window_extent(figure.canvas.get_renderer())
    existing = boxes(figure, [t for t in axes.texts if t not in notes])
    for index, box in enumerate(placed):
        assert inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1)
        for other in placed[:index] + existing:
            assert not box.overlaps(other), (notes[index].get_text())


def test_a_label_beside_its_point_has_no_leader_and_a_moved_one_has():
    points = np.array([[10.0, 1e9]] * 6)  # one place: the labels must stack away from it
    figure, axes = axes_with(points)
    notes = place_labels(axes, [((x, y), f"same place {i}") for i, (x, y) in
                                enumerate(points)], fontsize=7)
    assert notes[0].arrow_patch is None
    assert any(note.arrow_patch is not None for note in notes[1:])
    assert [note.get_text() for note in notes] == [f"same place {i}" for i in range(6)]
