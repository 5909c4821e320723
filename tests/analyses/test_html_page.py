"""Profile.export and Profile.export_html (analyses/html_page.py): the HTML report with the
advisor's advice in it; the view alone (views.exporters.export) writes a note instead."""

from pyfxprof.analyses.advisor import advise
from pyfxprof.views import exporters
from pyfxprof.views.html_report import advice_html
from tests.views.test_html_report import make_profile


def test_export_html_puts_the_advice_in_the_page(tmp_path):
    prof = make_profile()
    prof.export_html(tmp_path / "r.html", top=3)
    page = (tmp_path / "r.html").read_text()
    advice = advise(prof)
    assert page.count("<tr>") == 1 + 3
    assert advice_html(advice).split("</p>", 1)[1][:200] in page


def test_export_of_an_html_path_puts_the_advice_in_the_page_too(tmp_path):
    prof = make_profile()
    prof.export(tmp_path / "r.html")
    prof.export(tmp_path / "given.htm", advice=None)  # the caller's advice: none
    page = (tmp_path / "r.html").read_text()
    assert advice_html(advise(prof)).split("</p>", 1)[1][:200] in page
    assert "not included" in (tmp_path / "given.htm").read_text()


def test_the_export_registry_alone_leaves_a_note(tmp_path):
    prof = make_profile()
    exporters.export(prof, tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert 'id="advice"' in page and "not included" in page and "prof.advise()" in page
