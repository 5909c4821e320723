"""``Profile.export_html``: the standalone HTML report (views/html_report.py) with the advice
of analyses.advisor in it; the analysis runs here, the view only renders what it receives.

Example:
    >>> prof.export_html("report.html", top=30)   # doctest: +SKIP
"""

from __future__ import annotations

from ..data.files import PathLike
from ..data.profile import Profile
from ..views.html_report import REPORT_TOP, export_html_report
from .advisor import advise


def export_html(profile: Profile, path: PathLike, top: int = REPORT_TOP,
                metric: str = "median") -> None:
    """Write a standalone HTML report (header, table of the ``top`` nodes, module tree,
    flame graph, plot, advice); see views.html_report.

    >>> prof.export_html("report.html")   # doctest: +SKIP
    """
    export_html_report(profile, path, top=top, metric=metric, advice=advise(profile))
