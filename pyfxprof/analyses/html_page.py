"""``Profile.export`` and ``Profile.export_html``: the export registry (views/exporters.py),
with the advice of analyses.advisor in an HTML report; the analysis runs here, the view only
renders what it receives.

Example:
    >>> prof.export_html("report.html", top=30)   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from ..data.files import PathLike
from ..data.profile import Profile
from ..views import exporters
from ..views.html_report import REPORT_TOP, export_html_report
from .advisor import advise


def export_html(profile: Profile, path: PathLike, top: int = REPORT_TOP,
                metric: str = "median") -> None:
    """Write a standalone HTML report (header, table of the ``top`` nodes, module tree,
    flame graph, plot, advice); see views.html_report.

    >>> prof.export_html("report.html")   # doctest: +SKIP
    """
    export_html_report(profile, path, top=top, metric=metric, advice=advise(profile))


def export(profile: Profile, path: PathLike, format: str | None = None, **options: Any) -> None:
    """Write ``profile`` to ``path`` in ``format`` (a FORMATS name of views/exporters.py;
    default: from the suffix); ``options`` go to the format's writer. An HTML report gets the
    advisor's advice unless ``advice=`` is given.

    >>> prof.export("flame.svg"); prof.export("report.html")  # doctest: +SKIP
    """
    if "advice" not in options and exporters.chosen_format(path, format).name == "html":
        options["advice"] = advise(profile)
    exporters.export(profile, path, format, **options)


export.__doc__ = (export.__doc__ or "") + "".join((exporters.export.__doc__ or "").partition(
    "\n    Formats")[1:])
