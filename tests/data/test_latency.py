"""The latency summary (data/latency.py): quantiles, the p99 interval, run-count warnings, the
header line and the --latency / --tail command-line views."""

import re

import numpy as np
import pandas as pd
import pytest

from pyfxprof.cli.main import main
from pyfxprof.data.latency import latency_summary, too_few_runs
from pyfxprof.stats.order_statistics import runs_needed
from pyfxprof.data.profile import Profile
from pyfxprof.views.latency_text import latency_header, latency_line
from tests.toy_profiles import toy_nodes


def test_summary_quantiles_are_int_ns_hand_computed():
    s = latency_summary([100, 200, 300, 400, 1000])
    # linear interpolation: p90 at position 3.6 -> 400 + 0.6 * 600 = 760; p99 at 3.96 -> 976
    assert (s.n, s.mean, s.p50, s.p90, s.p99, s.p99_9, s.max) == (5, 400, 300, 760, 976, 998, 1000)
    assert all(isinstance(v, int) for v in (s.mean, s.p50, s.p90, s.p99, s.p99_9, s.max))
    assert s.preempted is None and s.as_dict()["p99_ci"] == s.p99_ci


def test_too_few_runs_warns_per_quantile():
    assert latency_summary(np.arange(20)).warnings == too_few_runs(20)
    assert [w.split()[0] for w in too_few_runs(20)] == ["p90", "p99", "p99.9"]
    assert too_few_runs(400) == ["p99.9 from 400 runs is not a p99.9 (needs >= 3688 runs)"]
    assert too_few_runs(5000) == []
    # the largest of runs_needed(q) values bounds q from above with probability >= 97.5%
    assert 1 - 0.99 ** runs_needed(0.99) >= 0.975 > 1 - 0.99 ** (runs_needed(0.99) - 1)


def test_interval_is_unbounded_above_with_few_runs():
    low, high = latency_summary(np.arange(1, 21)).p99_ci
    assert high is None and low is not None
    assert "unbounded" in str(latency_summary(np.arange(1, 21)))
    with pytest.raises(ValueError, match="no runs"):
        latency_summary([])


def _profile(totals, noise=None):
    totals = np.asarray(totals, dtype=np.int64)
    samples = np.column_stack([totals // 2, totals // 4, totals // 8, totals // 16])
    return Profile(toy_nodes(), samples, totals, {"model": "toy", "warmup": 0},
                   run_noise=noise)


def test_profile_latency_counts_and_excludes_preempted_runs():
    totals = [1000, 1010, 990, 5000, 1005, 995]
    noise = np.array([[0, 0, 1000, 1000]] * 6)
    noise[3] = [2, 0, 1000, 5000]
    prof = _profile(totals, noise)
    assert prof.latency().preempted == 1 and prof.latency().max == 5000
    clean = prof.latency(exclude_preempted=True)
    assert (clean.n, clean.max, clean.excluded, clean.preempted) == (5, 1010, 1, 1)
    assert "1 of 6 runs preempted" in latency_line(prof.latency())
    assert prof.without_preempted().meta["excluded_runs"] == 1
    assert "1 of 6 runs preempted" in prof.table()


def test_header_has_the_latency_line_and_a_warmup_line_when_warming_up():
    steady = _profile([1000, 1010, 990, 1000, 1005, 995, 1000, 1002])
    assert [line.split(":")[0] for line in latency_header(steady)] == ["latency"]
    warming = _profile([9000, 8000, 7000] + [1000, 1010, 990, 1000, 1005, 995, 1000, 1002])
    assert latency_header(warming)[1].startswith("warm-up: the first 3 timed runs are slower")


def test_cli_profile_latency_and_tail(capsys):
    code = main(["profile", "torch.nn:ReLU", "--input", "4x8", "--runs", "12", "--warmup", "1",
                 "--latency", "--tail", "0.9", "--tail-sort", "var_share"])
    out = capsys.readouterr().out
    assert code == 0
    assert "p99 95% CI" in out and "warning: p99 from 12 runs is not a p99" in out
    # (runs tied at the quantile join the tail: how many is the timings', not the CLI's)
    assert re.search(r"tail at q=0\.9: \d+ tail runs? of 12", out) and "(between nodes)" in out


def test_cli_refuses_a_tail_quantile_outside_0_1(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["profile", "torch.nn:ReLU", "--tail", "99"])
    assert exit_info.value.code == 2
    assert "expected a number between 0 and 1" in capsys.readouterr().err


def test_cli_report_tail_of_a_saved_profile(tmp_path, capsys):
    path = tmp_path / "p.json"
    _profile([1000, 1010, 990, 5000, 1005, 995]).save(path)
    assert main(["report", str(path), "--tail", "0.9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("tail at q=0.9"))
    assert lines[heading + 2].split()[0] == "conv1"  # half of each total: the largest excess
