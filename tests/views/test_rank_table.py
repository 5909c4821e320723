"""The rank report as an HTML page, and `pyfxprof report ranks.json --html` writing it."""

from __future__ import annotations

from pyfxprof.cli.main import main
from pyfxprof.views.rank_table import rank_report_html
from tests.data.test_rank_profiles import straggling_world


def test_the_html_page_has_ranks_stragglers_and_nodes():
    page = rank_report_html(straggling_world(), top=2)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert [part.split("</h2>")[0] for part in page.split("<h2>")[1:]] == [
        "Ranks", "Stragglers", "Nodes"]
    stragglers = page.split("<h2>Stragglers</h2>")[1].split("<h2>")[0]
    assert ">spin</td>" in stragglers and ">r3</td>" in stragglers and "+2.00 ms" in stragglers
    assert "2 more nodes not shown (top=2)" in page


def test_report_writes_the_rank_page_for_a_ranks_file(tmp_path, capsys):
    straggling_world().save(tmp_path / "ranks.json")
    assert main(["report", str(tmp_path / "ranks.json"), "--html",
                 str(tmp_path / "ranks.html")]) == 0
    assert "<h2>Stragglers</h2>" in (tmp_path / "ranks.html").read_text()
    assert "wrote HTML report of 4 ranks" in capsys.readouterr().err
