"""Shared matplotlib plumbing for pyfxprof's plots: lazy import, time units, saving."""

from __future__ import annotations

import functools
import io
from pathlib import Path

from ..data.files import open_output
from ..data.units import elide, time_unit  # noqa: F401  (time_unit: views/plot.py's)
from ..errors import PyfxprofError
from .safe_text import figure_text

#: Longest bar label in characters; longer ones are cut with '…'.
MAX_LABEL = 40


def figure_label(name, keep_tail: bool = False) -> str:
    """`name` as a plot's label: cut to MAX_LABEL characters with '…' (at the start when
    `keep_tail`), made safe for a figure.

    Example:
        >>> figure_label("x" * 50)[-3:], len(figure_label("x" * 50)), figure_label("ab")
        ('xx…', 40, 'ab')
    """
    return figure_text(elide(str(name), MAX_LABEL, keep_tail=keep_tail))


def matplotlib_figure():
    """A matplotlib Figure class that shows itself inline in notebooks (``_repr_png_``, no
    pyplot needed) and the Agg canvas (no pyplot global state), imported on first use.

    Example:
        >>> Figure, Canvas = matplotlib_figure()
        >>> figure = Figure(figsize=(1, 1)); canvas = Canvas(figure)
        >>> figure._repr_png_()[:4]
        b'\\x89PNG'
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PyfxprofError("plotting needs matplotlib: pip install matplotlib") from None
    return _inline_figure_class(Figure), FigureCanvasAgg


@functools.lru_cache(maxsize=None)
def _inline_figure_class(figure_class):
    """``figure_class`` with the PNG representation Jupyter displays."""
    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()

    return type("Figure", (figure_class,), {"_repr_png_": _repr_png_,
                                            "__module__": __name__})


def save_figure(figure, path, dpi: int = 100) -> None:
    """Write ``figure`` to ``path`` (format from the extension) or raise a one-line error.

    Example:
        >>> save_figure(figure, "top.png")  # doctest: +SKIP
    """
    if Path(path).is_dir():
        raise PyfxprofError(f"cannot write plot {path}: it is a directory; give a file name "
                            "such as top.png")
    # Without an extension, PNG (matplotlib would write PATH.png: write exactly PATH).
    file_format = Path(path).suffix[1:] or "png"
    if file_format not in figure.canvas.get_supported_filetypes():
        raise PyfxprofError(f"cannot write plot {path}: no writer for .{file_format}; use one of "
                            f"{sorted(figure.canvas.get_supported_filetypes())}")
    try:
        with open_output(path, binary=True) as stream:
            figure.savefig(stream, dpi=dpi, format=file_format)
    except PyfxprofError as error:
        raise PyfxprofError(f"cannot write plot {str(error)[len('cannot write '):]}") from None
