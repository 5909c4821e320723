"""Progress of the timed runs (tqdm.auto: a bar on a terminal, a widget in Jupyter).

The bar is updated between runs, never inside one, so it costs nothing the runs measure.
Runs expected to be quick, and output that is neither a terminal nor a notebook (logs, CI),
show nothing. In Jupyter without ipywidgets the bar is text on stdout: on stderr every refresh
would be a red line.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings

#: Runs expected to take less than this many seconds show no bar.
SHOW_AFTER_S = 2.0


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where tqdm.auto draws a widget).

    >>> in_notebook()
    False
    """
    shell = sys.modules.get("IPython")
    ipython = getattr(shell, "get_ipython", lambda: None)() if shell else None
    return ipython is not None and "IPKernelApp" in getattr(ipython, "config", {})


def has_widgets() -> bool:
    """True when ipywidgets is installed (tqdm.auto then draws a widget in notebooks).

    >>> isinstance(has_widgets(), bool)
    True
    """
    return importlib.util.find_spec("ipywidgets") is not None


class Progress:
    """A tqdm.auto bar over ``total`` runs, shown only when they are expected to take at least
    SHOW_AFTER_S seconds and someone can see it (a terminal's stderr or a notebook: a widget,
    or text on stdout without ipywidgets).

    Example:
        >>> bar = Progress(10, "runs", expected_s=0.0)   # silent: too quick
        >>> bar.update(5); bar.close()
    """

    def __init__(self, total: int, label: str, expected_s: float, stream=None) -> None:
        notebook = in_notebook()
        if stream is None:
            stream = sys.stdout if notebook and not has_widgets() else sys.stderr
        self.enabled = expected_s >= SHOW_AFTER_S and total > 0 and (
            notebook or _is_terminal(stream))
        self._bar = None
        if self.enabled:  # a notebook keeps the finished bar; a terminal clears its line
            self._bar = _auto_tqdm()(total=total, desc=label, unit="run", file=stream,
                                     leave=notebook, mininterval=0.5)

    def update(self, done: int) -> None:
        """Show ``done`` runs of the total."""
        if self._bar is not None:
            self._bar.update(done - self._bar.n)

    def grow(self, total: int) -> None:
        """Raise the total to ``total`` runs (more were added: compare()'s blocks)."""
        if self._bar is not None and total > self._bar.total:
            self._bar.total = total
            self._bar.refresh()

    def close(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _auto_tqdm():
    """tqdm.auto's bar class: a widget in notebooks with ipywidgets, else text. Its one-time
    warning that ipywidgets is missing is silenced: the text bar works without it."""
    from tqdm import TqdmWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        from tqdm.auto import tqdm
    return tqdm


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
