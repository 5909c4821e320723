"""Names with control characters and XML-invalid characters: escaped in text, replaced in SVG/HTML."""

import io
import xml.dom.minidom

import numpy as np
import pandas as pd

from pyfxprof.cli.main import main
from pyfxprof.data.profile import Profile
from pyfxprof.views.safe_text import TerminalStream, terminal_line, terminal_text, xml_text

EVIL = "a\x1b[31mRED\x07\x9b2J\u202e\ud800\x00"


def evil_profile():
    nodes = pd.DataFrame({
        "index": [0, 1], "name": [EVIL, "ok"], "op": ["call_module", "call_function"],
        "target": [EVIL, "add"], "module_path": [EVIL, ""], "module_type": [EVIL, "Net"],
        "module_stack": [(EVIL,), ()]})
    return Profile(nodes, np.array([[100, 50], [120, 60]]), np.array([200, 220]),
                   {"model": EVIL, "device": "cpu\x1b]0;title\x07"})


def no_raw_controls(text: str) -> bool:
    return not any(c in text for c in "\x1b\x07\x9b\x00\u202e\ud800")


def test_escapes_and_replacements():
    assert terminal_line("a\nb\x1b") == "a\\x0ab\\x1b"
    assert terminal_text("a\nb\tc\r\x1b\x9b") == "a\nb\tc\r\\x1b\\x9b"
    assert terminal_text("\u202e\ud800") == "\\u202e\\ud800"
    assert terminal_text("naïve → ok 名前") == "naïve → ok 名前"
    assert xml_text("x\x1b\x00\ufffe\ud800y\t\n") == "x\ufffd\ufffd\ufffd\ufffdy\t\n"
    out = io.StringIO()
    TerminalStream(out).write("p\x1bq\n")
    assert out.getvalue() == "p\\x1bq\n"


def test_every_text_output_escapes_controls(tmp_path, capsys):
    prof = evil_profile()
    assert no_raw_controls(prof.table(width=None)) and "a\\x1b[31mRED\\x07" in prof.table()
    assert no_raw_controls(prof.table(group_by="module"))
    assert no_raw_controls(prof.tree()) and no_raw_controls(str(prof.advise()))
    prof.export_stacks(tmp_path / "s.txt")
    stacks = (tmp_path / "s.txt").read_text()
    assert no_raw_controls(stacks) and len(stacks.splitlines()) == 2
    prof.save(tmp_path / "p.json")
    assert main(["report", str(tmp_path / "p.json"), "--tree"]) == 0
    out = capsys.readouterr()
    assert no_raw_controls(out.out + out.err) and "\\x1b]0;title\\x07" in out.out


def test_svg_and_html_outputs_parse_as_xml(tmp_path):
    prof = evil_profile()
    prof.export_flamegraph(tmp_path / "f.svg")
    xml.dom.minidom.parse(str(tmp_path / "f.svg"))  # raises on a character XML forbids
    prof.export_html(tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert xml_text(page) == page and "\x1b" not in page
    from pyfxprof.views.report import build_view
    from pyfxprof.views.report_render import render_html
    fragment = render_html(build_view(prof))
    xml.dom.minidom.parseString(fragment[fragment.index("<table>"):fragment.index("</table>") + 8])
