"""Tests of views.latency_text: the text of latency, warm-up and tail results, reached through
``str()`` of the plain-data results (served methods)."""

import numpy as np

from pyfxprof.data.latency import latency_summary
from pyfxprof.data.tail import tail_attribution
from pyfxprof.data.warmup import WarmupReport
from pyfxprof.views.latency_text import render_tail


def test_str_of_a_latency_summary_is_the_served_renderer():
    summary = latency_summary([1000, 2000, 3000, 4000], preempted=1, excluded=1)
    lines = str(summary).splitlines()
    assert lines[0].split() == ["runs", "4"] and lines[1].split() == ["mean", "2.50", "µs"]
    assert [line.split(None, 1) for line in lines if line.startswith("preempted")] == [
        ["preempted", "1 of 5 runs (excluded)"]]
    assert lines[-1] == "warning: p99.9 from 4 runs is not a p99.9 (needs >= 3688 runs)"


def test_str_of_a_warmup_report_names_preempted_untimed_runs_and_drift():
    report = WarmupReport(0, 2000, 0, -0.5, 10, None, None, 6)
    assert str(report) == ("warm-up: steady from the first timed run (2.00 µs); 6 of the 10 "
                           "untimed warm-up runs were preempted, too many to tell how many were "
                           "slow; steady runs drift (Spearman rho -0.50)")


def test_tail_text_cuts_at_top():
    totals = np.array([10, 20, 30, 40])
    frame = tail_attribution(["a", "b"], np.array([[5, 5], [10, 10], [15, 15], [20, 20]]),
                             totals, 0.5)
    lines = render_tail(frame, top=1).splitlines()
    assert lines[0].startswith("tail at q=0.5: 2 tail runs of 4")
    assert len(lines) == 4 and lines[-1] == "... 2 more rows"
