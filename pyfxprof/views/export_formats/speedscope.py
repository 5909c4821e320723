"""The speedscope format: the median run's timeline and a sampled profile weighted by a
per-node metric."""

from __future__ import annotations

from ..speedscope import export_speedscope
from . import ExportFormat


class Speedscope(ExportFormat):
    """A speedscope JSON file (views/speedscope.py)."""

    name = "speedscope"
    title = "speedscope file"
    suffixes = (".speedscope.json",)
    help = "a speedscope file (the median run's timeline, per-node metric weights)"
    writer = staticmethod(export_speedscope)
    options = ("metric",)
