"""The Chrome trace format (Trace Event Format JSON), of one profile or of a gathered ranks
file (one process row per rank)."""

from __future__ import annotations

from ..chrome_trace import export_chrome_trace
from ..rank_trace import export_chrome_trace as export_ranks_chrome_trace
from . import ExportFormat


class ChromeTrace(ExportFormat):
    """Runs as ProfilerStep slices with a slice per node (views/chrome_trace.py)."""

    name = "chrome_trace"
    title = "Chrome trace"
    suffixes = (".json", ".json.gz")
    help = "a Chrome/Perfetto trace (Trace Event Format JSON; Perfetto, HTA, TensorBoard)"
    writer = staticmethod(export_chrome_trace)
    rank_writer = staticmethod(export_ranks_chrome_trace)
