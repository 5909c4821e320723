"""An Advice as text (views/advice_text.py, served as Advice.__str__)."""

from pyfxprof.analyses.advisor import Advice, Suggestion
from pyfxprof.views.advice_text import render_advice, saving_text


def test_str_is_the_numbered_report_of_the_view():
    first = Suggestion("r1", "high", "Fuse these", ["a: 5 µs"], "do it", 2_000.0)
    second = Suggestion("r2", "info", "Look", ["b: 1 µs", "c: \x1b[31m"], "read")
    advice = Advice([first, second], total_ns=10_000.0, subject="net on cpu")
    text = str(advice)
    assert text == render_advice(advice)
    assert text.splitlines()[0] == ("Advice for net on cpu: 2 suggestions (median run 10.0 µs; "
                                    "percentages are shares of it)")
    assert "2. [info] Look  (rule: r2)" in text and "\x1b" not in text  # terminal-safe
    assert saving_text(advice, first) == "2.00 µs (20.0%)"
    assert saving_text(advice, second) == "not estimated"
