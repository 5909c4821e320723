"""The HTML report format: one standalone page, of one profile or of a gathered ranks file."""

from __future__ import annotations

from ..html_report import export_html_report
from ..rank_table import export_rank_report_html
from . import ExportFormat


class Html(ExportFormat):
    """The report page (views/html_report.py); it shows the advice it is given (``advice=``:
    Profile.export and the CLI pass the advisor's, analyses/html_page.py)."""

    name = "html"
    title = "HTML report"
    suffixes = (".html", ".htm")
    help = "a standalone HTML report (table, module tree, flame graph, plot, advice)"
    writer = staticmethod(export_html_report)
    options = ("metric",)
    rank_writer = staticmethod(export_rank_report_html)
