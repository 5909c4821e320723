"""A standalone HTML report of a Profile: one self-contained page (no network, no files beside
it) with the header, the table, the module tree, the interactive flame graph, the plot of the
slowest nodes, the roofline (when the profile holds the machine's peaks) and the advice the caller passes (views never run the advisor:
``Profile.export_html`` in analyses/html_page.py and the CLI pass ``advise(profile)``). Also the
HTML of the advice on its own (notebooks).

Example:
    >>> export_html_report(prof, "report.html", advice=prof.advise())   # doctest: +SKIP
"""

from __future__ import annotations

import base64
import html
import io
from typing import TYPE_CHECKING

from ..data.files import PathLike, open_output
from ..data.profile import Profile
from . import report, report_render
from .advice_text import render_advice, saving_text
from .flamegraph import flamegraph_svg
from .safe_text import xml_text

if TYPE_CHECKING:
    from ..data.advice import Advice

#: Rows of the table in the report.
REPORT_TOP = 50
_PAGE_STYLE = """<style>
body{margin:0 auto;max-width:1240px;padding:16px 20px 40px;background:#fff}
h1{font:600 22px -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:8px 0 4px}
h2{font:600 17px -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:26px 0 6px;
  border-bottom:1px solid #ddd;padding-bottom:3px}
nav a{margin-right:14px;color:#1f5fbf}
.figure{max-width:100%;height:auto;border:1px solid #eee}
.advice ol>li{margin:0 0 12px}.advice ul{margin:3px 0 4px;padding-left:22px}
.advice ul li{margin:0;line-height:1.45}.label{font-weight:600}
.scroll{max-height:460px;overflow:auto}
.severity{display:inline-block;min-width:56px;text-align:center;border-radius:3px;
  padding:1px 6px;margin-right:6px;color:#fff;font-size:11px;text-transform:uppercase}
.severity-high{background:#c0392b}.severity-medium{background:#d68910}
.severity-low{background:#2e86c1}.severity-info{background:#7f8c8d}
.rule{color:#777;font-size:12px}
</style>"""
_NO_ADVICE = ("<p>not included: <code>prof.export_html(path)</code> and <code>pyfxprof report "
              "--html</code> include it, or pass <code>advice=prof.advise()</code></p>")
_SECTIONS = (("table", "Nodes"), ("tree", "Module tree"), ("flame", "Flame graph"),
             ("plot", "Slowest nodes"), ("roofline", "Roofline"), ("advice", "Advice"))


def advice_html(advice: Advice) -> str:
    """An Advice (pyfxprof.analyses.advisor) as an HTML fragment: one numbered item per
    suggestion with its severity, evidence, action and expected saving.

    >>> advice_html(prof.advise())[:26]  # doctest: +SKIP
    '<div class="pyfxprof advi'
    """
    esc = html.escape
    items = []
    for item in advice:
        evidence = "".join(f"<li>{esc(line)}</li>" for line in item.evidence)
        items.append(
            f'<li><span class="severity severity-{esc(item.severity)}">{esc(item.severity)}'
            f"</span><b>{esc(item.title)}</b> <span class=\"rule\">rule: {esc(item.rule)}</span>"
            f'<ul>{evidence}</ul><div><span class="label">action:</span> {esc(item.action)}'
            f'</div><div><span class="label">expected saving:</span> '
            f"{esc(saving_text(advice, item))}</div></li>")
    lines = render_advice(advice).splitlines()
    body = f"<ol>{''.join(items)}</ol>" if items else "<p>nothing to suggest</p>"
    return (f'<div class="pyfxprof advice">{report_render.HTML_STYLE}{_PAGE_STYLE}'
            f"<p>{esc(lines[0])}</p>{body}</div>")


def _plot_img(profile: Profile, kind: str = "nodes") -> str:
    """The plot of `kind` (views.plot.KINDS: the slowest nodes, the roofline) as an inline
    PNG, or a note when there is nothing to plot (a roofline without the machine's peaks) or
    no matplotlib."""
    from ..errors import PyfxprofError
    from .plot import plot
    try:
        figure = plot(profile, top=20 if kind == "nodes" else 10, kind=kind)
    except PyfxprofError as error:
        return f"<p>{html.escape(str(error))}</p>"
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    alt = "slowest nodes" if kind == "nodes" else kind
    return f'<img class="figure" alt="{alt}" src="data:image/png;base64,{data}">'


def _inline_svg(profile: Profile, metric: str) -> str:
    """The flame graph's <svg> element, scaled to the page width."""
    svg = flamegraph_svg(profile, metric=metric)
    svg = svg[svg.index("<svg"):]
    return svg.replace("<svg ", '<svg class="figure" style="width:100%;height:auto" ', 1)


def html_report(profile: Profile, top: int = REPORT_TOP, metric: str = "median",
                title: str | None = None, advice: Advice | None = None) -> str:
    """The report as one self-contained HTML page (see the module docstring); ``top`` rows in
    the table, flame graph weights by ``metric``, ``advice`` (of analyses.advisor.advise) in
    its section (None: the section says how to include it)."""
    meta = profile.meta
    title = title or f"pyfxprof — {meta.get('model', '?')} on {meta.get('device', '?')}"
    bodies = {
        "table": report_render.render_html(report.build_view(profile, top=top)),
        "tree": f'<div class="pyfxprof"><pre class="scroll">{html.escape(profile.tree())}'
                '</pre></div>',
        "flame": _inline_svg(profile, metric),
        "plot": _plot_img(profile),
        "roofline": _plot_img(profile, "roofline"),
        "advice": _NO_ADVICE if advice is None else advice_html(advice),
    }
    nav = " ".join(f'<a href="#{key}">{name}</a>' for key, name in _SECTIONS)
    sections = "\n".join(f'<h2 id="{key}">{name}</h2>\n{bodies[key]}' for key, name in _SECTIONS)
    return report_render.html_page(title, f"<nav>{nav}</nav>\n{sections}", _PAGE_STYLE)


def export_html_report(profile: Profile, path: PathLike, top: int = REPORT_TOP,
                       metric: str = "median", title: str | None = None,
                       advice: Advice | None = None) -> None:
    """Write :func:`html_report` of ``profile`` to ``path`` (open it in any browser).

    >>> export_html_report(prof, "rn18.html", top=30, advice=prof.advise())  # doctest: +SKIP
    """
    page = xml_text(html_report(profile, top=top, metric=metric, title=title, advice=advice))
    with open_output(path) as stream:
        stream.write(page)
