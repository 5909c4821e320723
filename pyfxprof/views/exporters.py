"""The export registry: every file format a Profile is written to, one row each.

``Profile.export``, the CLI's export flags (``--chrome-trace PATH`` ...), ``pyfxprof report``
and the table of outputs in docs/outputs.md all read FORMATS; adding a format is one view file
plus one row here (see docs/architecture.md, "How to add a format").

Example:
    >>> [f.name for f in FORMATS][:3]
    ['chrome_trace', 'speedscope', 'flamegraph']
    >>> format_for_path("trace.json.gz").name
    'chrome_trace'
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..data.files import PathLike
from ..data.profile import Profile
from ..errors import ArgumentError, PyfxprofError
from .chrome_trace import export_chrome_trace
from .csv_table import export_csv
from .flamegraph import export_flamegraph
from .html_report import export_html_report
from .plot import plot
from .rank_table import export_rank_report_html
from .rank_trace import export_chrome_trace as export_ranks_chrome_trace
from .speedscope import export_speedscope
from .stacks import export_stacks


@dataclass(frozen=True)
class Format:
    """One export format: ``name`` (``Profile.export(path, name)``, CLI flag ``--name``),
    ``title`` (what a message says was written), the file ``suffixes`` that select it,
    ``writer(profile, path, **options)``, a one-line ``help`` (a noun phrase), the CLI ``options`` it
    takes (attributes of the parsed arguments passed on by name, e.g. ``metric``) and, for the
    formats a gathered ranks file is written to too, ``rank_writer(ranks, path, ...)`` (None:
    the format renders one rank's profile)."""

    name: str
    title: str
    suffixes: tuple[str, ...]
    writer: Callable
    help: str
    options: tuple[str, ...] = ()
    rank_writer: Callable | None = None

    @property
    def flag(self) -> str:
        """The CLI flag, e.g. ``--chrome-trace``."""
        return "--" + self.name.replace("_", "-")


def _write_plot(profile, path, top: int = 20) -> None:
    plot(profile, path, top=top)


#: Every format, in the order the CLI writes them. Longer suffixes win (``.speedscope.json``
#: over ``.json``); a suffix belongs to one format (tests/views/test_exporters.py checks it).
FORMATS = (
    Format("chrome_trace", "Chrome trace", (".json", ".json.gz"), export_chrome_trace,
           "a Chrome/Perfetto trace (Trace Event Format JSON; Perfetto, HTA, TensorBoard)",
           rank_writer=export_ranks_chrome_trace),
    Format("speedscope", "speedscope file", (".speedscope.json",), export_speedscope,
           "a speedscope file (the median run's timeline, per-node metric weights)",
           ("metric",)),
    Format("flamegraph", "flame graph", (".svg",), export_flamegraph,
           "an interactive SVG flame graph by module hierarchy", ("metric",)),
    Format("stacks", "folded stacks", (".folded", ".folded.gz", ".txt", ".txt.gz"),
           export_stacks, "folded stacks (flamegraph.pl --countname ns; speedscope)",
           ("metric",)),
    Format("plot", "plot", (".png", ".pdf"), _write_plot, "a bar chart of the slowest nodes"),
    Format("html", "HTML report", (".html", ".htm"), export_html_report,
           "a standalone HTML report (table, module tree, flame graph, plot, advice)",
           ("metric",), export_rank_report_html),
    Format("csv", "node table", (".csv", ".csv.gz"), export_csv, "the node table as CSV (ns)"),
)
BY_NAME = {f.name: f for f in FORMATS}


def _listing() -> str:
    return ", ".join(f"{f.name} ({' '.join(f.suffixes)})" for f in FORMATS)


def format_for_path(path) -> Format:
    """The format whose longest suffix ends ``path``'s name, or a PyfxprofError listing them.

    >>> format_for_path("run.speedscope.json").name, format_for_path("flame.svg").name
    ('speedscope', 'flamegraph')
    """
    name = Path(path).name.lower()
    matches = [(len(s), f) for f in FORMATS for s in f.suffixes if name.endswith(s)]
    if not matches:
        raise PyfxprofError(f"cannot tell the format of {path} from its suffix: pass "
                            f"format= one of {_listing()}")
    return max(matches, key=lambda match: match[0])[1]


def export(profile: Profile, path: PathLike, format: str | None = None, **options: Any) -> None:
    """Write ``profile`` to ``path`` in ``format`` (a FORMATS name; default: from the suffix);
    ``options`` go to the format's writer (e.g. ``metric="total"``, ``runs=range(5)``).

    >>> prof.export("flame.svg"); prof.export("trace.txt", "chrome_trace")  # doctest: +SKIP
    """
    chosen = chosen_format(path, format)
    _check_options(chosen, options)
    chosen.writer(profile, path, **options)


def chosen_format(path: PathLike, format: str | None = None) -> Format:
    """The FORMATS row ``export(path, format)`` writes: ``format`` by name, else the path's
    suffix.

    >>> chosen_format("report.html").name, chosen_format("t.json", "chrome_trace").name
    ('html', 'chrome_trace')
    """
    if format is None:
        return format_for_path(path)
    if format in BY_NAME:
        return BY_NAME[format]
    raise PyfxprofError(f"unknown export format {format!r}: use one of {_listing()}")


def _check_options(chosen: Format, options: dict) -> None:
    """ArgumentError naming an option that ``chosen``'s writer does not take (and those it
    takes), before anything is written."""
    taken = [name for name, p in list(inspect.signature(chosen.writer).parameters.items())[2:]
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = sorted(set(options) - set(taken))
    if unknown:
        raise ArgumentError(f"{unknown[0]}= is not an option of the {chosen.name} format; it "
                            f"takes {', '.join(taken) or 'no options'}")


export.__doc__ = (export.__doc__ or "") + "\n    Formats (name, suffixes: what):\n" + "".join(
    f"      {f.name} ({' '.join(f.suffixes)}): {f.help}\n" for f in FORMATS)
