"""The flame graph format: an interactive SVG by module hierarchy."""

from __future__ import annotations

from ..flamegraph import export_flamegraph
from . import ExportFormat


class Flamegraph(ExportFormat):
    """An SVG flame graph weighted by a per-node metric (views/flamegraph.py)."""

    name = "flamegraph"
    title = "flame graph"
    suffixes = (".svg",)
    help = "an interactive SVG flame graph by module hierarchy"
    writer = staticmethod(export_flamegraph)
    options = ("metric",)
