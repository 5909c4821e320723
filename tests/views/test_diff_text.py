"""ProfileDiff as text and HTML (views/diff_text.py, served as ProfileDiff.table, _repr_html_ and
__repr__)."""

import pytest

from pyfxprof.analyses.diff import diff
from pyfxprof.views.diff_text import diff_html, diff_repr, diff_table, signed_pct
from tests.analyses.test_diff import small_pair

GOLDEN_TABLE = """\
pyfxprof diff — main (net, 5 runs) vs pr (net, 5 runs) · by node
total: main 1.80 µs → pr 2.90 µs median (+61.1%, 95% interval [+52.9%, +69.8%]): slower
rows: 4 — 1 slower (+), 0 faster (-), 1 same (=), 0 unresolved (?), 1 added, 1 removed, 0 fused
significance: one session per side, too few rows to measure the noise between sessions: runs inside each session are the only noise counted (a drift between sessions can look like a change; see docs/diff.md); Benjamini–Hochberg FDR 0.05 across rows, intervals at 97.5% (false coverage rate 0.05), margin ±5.0%; smallest resolvable change ±10.2%

Node  main median  pr median      Diff  Rel change           Interval        q  Change
----  -----------  ---------  --------  ----------  -----------------  -------  -------
conv      1.00 µs    2.00 µs  +1.00 µs     +100.0%  [+80.6%, +121.4%]  3.1e-52  +
new          0 ns     300 ns   +300 ns           -                  -        -  added
old        200 ns       0 ns   -200 ns     -100.0%                  -        -  removed
relu       500 ns     500 ns      0 ns        0.0%       [0.0%, 0.0%]        1  ="""


def test_golden_table():
    assert diff(*small_pair(), labels=("main", "pr")).table() == GOLDEN_TABLE


def test_table_top_and_sort():
    text = diff(*small_pair()).table(sort_by="name", top=2)
    rows = text.split("\n\n")[1].splitlines()[2:]
    assert [r.split()[0] for r in rows] == ["conv", "new"]  # module "conv"'s call, named once
    assert text.endswith("… 2 more rows not shown (top=2)")
    with pytest.raises(ValueError, match="sort_by must be one of"):
        diff(*small_pair()).table(sort_by="speed")


def test_the_served_methods_are_the_views_functions():
    d = diff(*small_pair(), labels=("main", "pr"))
    assert d.table(width=None) == diff_table(d, width=None) == GOLDEN_TABLE
    assert d._repr_html_() == diff_html(d) and "<table>" in d._repr_html_()
    assert repr(d) == diff_repr(d) == "<ProfileDiff main (5 runs) vs pr (5 runs): total +61.1%>"
    assert (signed_pct(0.05), signed_pct(-0.05)) == ("+5.0%", "-5.0%")
