"""Labels for points of a matplotlib plot that do not overlap one another, the texts already on
the axes, nor leave the axes: each beside its point where there is room, else moved to the
nearest free place with a leader line to its point."""

from __future__ import annotations

from typing import Any

#: Offsets tried for a label's lower-left corner, in label heights from its point: beside it
#: first (right, then left, above then below), then farther up and down the same sides.
STEPS = tuple(step for k in range(16) for step in (0.4 + 1.25 * k, -1.3 - 1.25 * k))
#: Gap between a point and its label, in points.
GAP = 5.0
#: Clearance kept between labels, in points: text boxes grow by a pixel or two when the figure
#: is saved at another dpi than it was laid out at (glyph metrics round per size).
CLEARANCE = 1.0


def _overlap(box, others, pad: float = 0.0) -> float:
    """The area `box`, grown by `pad` on each side, shares with the boxes `others` (display
    pixels)."""
    total = 0.0
    for other in others:
        width = min(box.x1 + pad, other.x1) - max(box.x0 - pad, other.x0)
        height = min(box.y1 + pad, other.y1) - max(box.y0 - pad, other.y0)
        total += max(width, 0.0) * max(height, 0.0)
    return total


def _candidates(width: float, height: float) -> list[tuple[float, float]]:
    """Offsets (points) of a label's lower-left corner from its point: STEPS on the right,
    then on the left, for a label `width` x `height` points."""
    return [(side, step * height) for step in STEPS for side in (GAP, -GAP - width)]


def _text_box(note, renderer):
    """The display box of a text, an annotation's text alone (not its leader line), at its
    current offset."""
    from matplotlib.text import Annotation, Text
    if isinstance(note, Annotation):
        note.update_positions(renderer)
    return Text.get_window_extent(note, renderer)


def _best_offset(axes, probe, renderer, taken: list) -> tuple[float, float]:
    """The first of _candidates where `probe` (an annotation) overlaps none of `taken` and
    stays inside `axes`, else the one where it overlaps least."""
    scale = 72.0 / axes.figure.dpi  # display pixels -> points
    size = _text_box(probe, renderer)
    inside = axes.get_window_extent(renderer)
    best, best_cost = (GAP, 0.0), None
    for offset in _candidates(size.width * scale, size.height * scale):
        probe.xyann = offset
        box = _text_box(probe, renderer)
        outside = not (inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1))
        cost = _overlap(box, taken, CLEARANCE / scale) + (1e9 if outside else 0.0)
        if best_cost is None or cost < best_cost:
            best, best_cost = offset, cost
        if cost == 0.0:
            break
    return best


def place_labels(axes, labels: list[tuple[tuple[float, float], str]], **text: Any) -> list:
    """Annotations of `labels` ((x, y) in data coordinates, text) in order of importance,
    each at the first offset (_candidates) where it overlaps no label placed before it, no
    text already on `axes` and stays inside the axes (else where it overlaps least), with a
    leader line when it is not beside its point; `text`: Text keywords (fontsize...). Call
    it once the axes' limits and the figure's layout are final.

    Example:
        >>> place_labels(axes, [((1.0, 2.0), "slowest (3 ms)")], fontsize=7)  # doctest: +SKIP
    """
    renderer = axes.figure.canvas.get_renderer()
    taken = [_text_box(t, renderer) for t in axes.texts]
    placed = []
    for xy, label in labels:
        probe = axes.annotate(label, xy, xytext=(GAP, 0.0), textcoords="offset points",
                              annotation_clip=False, **text)
        offset = _best_offset(axes, probe, renderer, taken)
        height = _text_box(probe, renderer).height * 72.0 / axes.figure.dpi
        probe.remove()
        leader = {"arrowstyle": "-", "color": "#555555", "linewidth": 0.5, "shrinkA": 0.0,
                  "shrinkB": 3.0, "relpos": (0.0, 0.5) if offset[0] > 0 else (1.0, 0.5)}
        note = axes.annotate(label, xy, xytext=offset, textcoords="offset points",
                             annotation_clip=False,
                             arrowprops=leader if abs(offset[1]) > 2 * height else None, **text)
        note.set_in_layout(False)
        taken.append(_text_box(note, renderer))
        placed.append(note)
    return placed
