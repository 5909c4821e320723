"""A report's View (every cell a formatted string) and its two renderings: aligned text that
fits a terminal, and HTML. report.py builds Views of a Profile; rank_table.py and
analyses/diff.py build their own."""

from __future__ import annotations

import html
import shutil
import sys
import textwrap
from dataclasses import dataclass, field, replace

from ..data.units import elide
from .safe_text import is_terminal_safe, terminal_line, terminal_text, xml_text

#: Narrowest a text column is cut to when a table must fit the terminal.
MIN_TEXT_WIDTH = 10


@dataclass
class View:
    """A report ready to render: every cell is a formatted string."""

    header: list[str]
    titles: list[str]
    right_aligned: list[bool]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    #: Column positions to leave out first when the table must fit a width, in that order.
    drop_order: list[int] = field(default_factory=list)


def rows_left_out(total: int, shown: int, label: str, top: int | None) -> list[str]:
    """The note under a table cut to its ``top`` rows ([] when every row is shown).

    >>> rows_left_out(12, 10, "nodes", 10)
    ['… 2 more nodes not shown (top=10)']
    """
    return [f"… {total - shown} more {label} not shown (top={top})"] if shown < total else []


def terminal_width(stream=None) -> int | None:
    """Columns of the terminal ``stream`` (default stdout) writes to; None when it is not a
    terminal (a file, a pipe, a notebook), where tables keep their full width.

    >>> import io; terminal_width(io.StringIO()) is None
    True
    """
    stream = sys.stdout if stream is None else stream
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size().columns


def _wrap_line(line: str, width: int) -> list[str]:
    """A header line cut at its " · " separators into lines of at most ``width`` (when it
    can), a part longer than that cut at its spaces.

    >>> _wrap_line("a row: the node · its call and kernel", 12)
    ['a row: the', '  node', '  its call', '  and kernel']
    """
    out: list[str] = []
    for part in line.split(" · "):
        if out and len(out[-1]) + 3 + len(part) <= width:
            out[-1] += " · " + part
        elif len(part) + (2 if out else 0) > width:
            pieces = textwrap.wrap(part, max(width - 2, 1), break_long_words=False)
            out.extend(piece if not out and i == 0 else "  " + piece
                       for i, piece in enumerate(pieces))
        else:
            out.append(part if not out else "  " + part)
    return out


def _fit_columns(view: View, widths: list[int], width: int) -> tuple[list[int], list[int]]:
    """(kept column positions, their widths) of a table at most ``width`` characters wide:
    columns of ``view.drop_order`` are left out first, then the widest text columns are cut
    (down to MIN_TEXT_WIDTH), then columns are dropped from the right (never the first)."""
    widths = list(widths)
    text = [i for i, right in enumerate(view.right_aligned) if not right]
    kept = list(range(len(widths)))

    def total() -> int:
        return sum(widths[i] for i in kept) + 2 * (len(kept) - 1)

    for position in view.drop_order:
        if total() <= width:
            break
        kept.remove(position)
    while total() > width:
        widest = max((i for i in text if i in kept), key=lambda i: widths[i], default=None)
        if widest is None or widths[widest] <= MIN_TEXT_WIDTH:
            break
        widths[widest] -= 1
    while total() > width and len(kept) > 1:
        kept.pop()
    return kept, [widths[i] for i in kept]


def render_text(view: View, width: int | None = None) -> str:
    """The view as aligned plain text (two spaces between columns, no trailing blanks).

    ``width``: fit the table and header into this many characters (cut text columns, then
    drop columns from the right, with a note); None: no limit.
    """
    rows = view.rows
    if not is_terminal_safe("".join(cell for row in rows for cell in row)):
        rows = [[terminal_line(c) for c in r] for r in rows]  # only then cell by cell
    view = replace(view, header=[terminal_text(h) for h in view.header], rows=rows,
                   notes=[terminal_text(n) for n in view.notes])
    widths = [max([len(t)] + [len(r[i]) for r in view.rows]) for i, t in enumerate(view.titles)]
    kept, widths = (list(range(len(widths))), widths) if width is None else _fit_columns(
        view, widths, width)
    right = [view.right_aligned[i] for i in kept]

    def line(cells) -> str:
        cells = [elide(cells[i], w) for i, w in zip(kept, widths)]
        padded = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
        return "  ".join(padded).rstrip()

    table = ([line(view.titles), "  ".join("-" * w for w in widths)]
             + [line(r) for r in view.rows])
    header, notes = view.header, list(view.notes)
    if width is not None:
        header = [part for text in header for part in _wrap_line(text, width)]
        dropped = [view.titles[i] for i in range(len(view.titles)) if i not in kept]
        if dropped:
            notes.append(f"columns not shown to fit {width} characters: {', '.join(dropped)} "
                         "(widen the terminal, or table(width=None))")
        notes = [part for note in notes for part in textwrap.wrap(
            note, width, subsequent_indent="  ", break_on_hyphens=False)]
    blocks = [header, table] + ([notes] if notes else [])
    return "\n\n".join("\n".join(block) for block in blocks)


#: The HTML table's own style, so it reads the same in Jupyter, a browser or an HTML report.
HTML_STYLE = """<style>
.pyfxprof{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px;
  color:#222}
.pyfxprof pre{font-family:Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12px;
  background:#f6f6f6;padding:6px 8px;margin:4px 0;white-space:pre-wrap;border-radius:3px}
.pyfxprof table{border-collapse:collapse;margin:6px 0}
.pyfxprof th,.pyfxprof td{padding:3px 10px;border-bottom:1px solid #e2e2e2;
  white-space:nowrap}
.pyfxprof th{background:#eef1f5;font-weight:600;border-bottom:2px solid #c8cdd5}
.pyfxprof td{font-variant-numeric:tabular-nums}
.pyfxprof tbody tr:nth-child(even){background:#fafafa}
.pyfxprof tbody tr:hover{background:#fff4d6}
</style>"""


def html_page(title: str, body: str, style: str = "") -> str:
    """A whole HTML page: ``title`` in its <title> and <h1>, HTML_STYLE (then ``style``) in
    its head, ``body`` (HTML) under the heading.

    >>> html_page("a < b", "<p>x</p>").splitlines()[-2]
    '<body class="pyfxprof"><h1>a &lt; b</h1><p>x</p>'
    """
    title = html.escape(title)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{title}</title>{HTML_STYLE}{style}</head>\n"
            f'<body class="pyfxprof"><h1>{title}</h1>{body}\n</body></html>\n')


def render_html(view: View) -> str:
    """The view as a self-contained HTML fragment (its own <style>; header and notes in
    <pre>, the rows in a <table>)."""
    def cells(tag: str, values) -> str:
        return "".join(
            f'<{tag} style="text-align:{"right" if right else "left"}">{html.escape(v)}</{tag}>'
            for v, right in zip(values, view.right_aligned))

    body = "\n".join(f"<tr>{cells('td', row)}</tr>" for row in view.rows)
    parts = [
        '<div class="pyfxprof">', HTML_STYLE,
        f"<pre>{html.escape(chr(10).join(view.header))}</pre>",
        f"<table>\n<thead><tr>{cells('th', view.titles)}</tr></thead>",
        f"<tbody>\n{body}\n</tbody>\n</table>",
    ]
    if view.notes:
        parts.append(f"<pre>{html.escape(chr(10).join(view.notes))}</pre>")
    parts.append("</div>")
    return xml_text("\n".join(parts))
