"""The folded stacks format (one line per stack and its weight), read by flamegraph.pl and
speedscope."""

from __future__ import annotations

from ..stacks import export_stacks
from . import ExportFormat


class Stacks(ExportFormat):
    """Folded stacks weighted by a per-node metric in ns (views/stacks.py)."""

    name = "stacks"
    title = "folded stacks"
    suffixes = (".folded", ".folded.gz", ".txt", ".txt.gz")
    help = "folded stacks (flamegraph.pl --countname ns; speedscope)"
    writer = staticmethod(export_stacks)
    options = ("metric",)
