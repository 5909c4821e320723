import re
from html.parser import HTMLParser

import numpy as np
import pytest

from pyfxprof.analyses.advisor import Advice, Suggestion
from pyfxprof.data.profile import Profile
from pyfxprof.views.html_report import advice_html, export_html_report, html_report
from tests.toy_profiles import toy_nodes

SAMPLES = np.array([[1000, 2000, 300, 40], [1200, 2100, 301, 41], [900, 5000, 299, 40],
                    [1100, 2000, 300, 40], [1000, 2000, 300, 40]], dtype=np.int64)


def make_profile():
    return Profile(toy_nodes(), SAMPLES, SAMPLES.sum(axis=1) + 100,
                   {"model": "toy <net>", "device": "cpu", "overhead_ns": 20.0})


class Tags(HTMLParser):
    """Every start tag with its attributes; fails on nothing (html.parser is lenient), so the
    test checks the structure it needs explicitly."""

    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_report_is_one_self_contained_page_with_every_section(tmp_path):
    path = tmp_path / "r.html"
    export_html_report(make_profile(), path)
    page = path.read_text()
    parser = Tags()
    parser.feed(page)
    ids = [attrs.get("id") for _, attrs in parser.tags if attrs.get("id")]
    assert ids == ["table", "tree", "flame", "plot", "roofline", "advice"]
    links = [a.get("src") or a.get("href") for _, a in parser.tags if a.get("src") or a.get("href")]
    assert all(link.startswith(("#", "data:image/png;base64,")) for link in links)  # offline
    assert any(link.startswith("data:image/png") for link in links)
    assert "<title>pyfxprof — toy &lt;net&gt; on cpu</title>" in page
    assert page.count("<tr>") == 1 + 4                              # the nodes table
    assert "layer1.0 (BasicBlock)" in page or "layer1" in page      # the module tree
    assert re.search(r'<svg class="figure"[^>]*data-geometry=', page)  # inline flame graph
    assert "function zoom" in page and "<style>" in page


def test_advice_renders_as_html_items():
    advice = Advice([Suggestion("r1", "high", "Fuse <these>", ["a: 5 µs", "b: 3 µs"], "do it",
                                2_000.0)], total_ns=10_000.0, subject="net on cpu")
    page = advice._repr_html_()
    assert page == advice_html(advice)
    assert "Fuse &lt;these&gt;" in page and "severity-high" in page
    assert page.count("<li>") == 3 and "2.00 µs (20.0%)" in page  # the item, its evidence
    assert "nothing to suggest" in advice_html(Advice([], total_ns=1.0))


def test_report_of_a_profile_without_runs_says_there_is_nothing_to_plot():
    empty = Profile(toy_nodes(), np.zeros((0, 4), np.int64), np.zeros(0, np.int64), {})
    assert "nothing to plot" in html_report(empty)


@pytest.mark.skipif(not __import__("shutil").which("chromium"), reason="chromium not installed")
def test_page_renders_in_headless_chromium(tmp_path):
    import subprocess
    export_html_report(make_profile(), tmp_path / "r.html")
    png = tmp_path / "r.png"
    subprocess.run(["scripts/screenshots.sh", str(tmp_path / "shots"), str(tmp_path / "r.html")],
                   check=True, timeout=120, capture_output=True)
    assert (tmp_path / "shots" / "r.png").read_bytes()[:4] == b"\x89PNG"
    assert not png.exists()


def test_report_table_ranks_by_median_not_by_a_preempted_run():
    from tests.views.test_report import preempted_profile
    page = html_report(preempted_profile())
    table = page[page.index("<table>"):]
    assert table.index(">logits<") < table.index(">layer_norm<")
