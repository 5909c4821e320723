"""Profile.export_html (analyses/html_page.py): the HTML report with the advisor's advice in it;
the view alone (prof.export("r.html")) writes a note in the advice section instead."""

from pyfxprof.analyses.advisor import advise
from pyfxprof.views.html_report import advice_html
from tests.views.test_html_report import make_profile


def test_export_html_puts_the_advice_in_the_page(tmp_path):
    prof = make_profile()
    prof.export_html(tmp_path / "r.html", top=3)
    page = (tmp_path / "r.html").read_text()
    advice = advise(prof)
    assert page.count("<tr>") == 1 + 3
    assert advice_html(advice).split("</p>", 1)[1][:200] in page


def test_the_export_registry_alone_leaves_a_note(tmp_path):
    prof = make_profile()
    prof.export(tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert 'id="advice"' in page and "not included" in page and "prof.advise()" in page
