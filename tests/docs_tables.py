"""Read a markdown table out of a docs page, for tests that check a docs table against the one
place its concept is defined (export formats, statistics, capture rungs, ...)."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def table_after(page: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped, the separator row left out) of the first table after the
    line ``heading`` in docs/``page``.

    >>> table_after("outputs.md", "## Every format at a glance")[0][0]  # doctest: +SKIP
    'Format'
    """
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    start = lines.index(heading)
    first = next(k for k in range(start, len(lines)) if lines[k].startswith("|"))
    rows = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not all(set(cell) <= set("-: ") for cell in cells):
            rows.append(cells)
    return rows
