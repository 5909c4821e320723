"""Tests of ProfilingInterpreter: the FX tutorial's API on native timers."""

import torch

from pyfxprof import ProfilingInterpreter
from tests.models import Net, Spin, net_input


def test_run_returns_the_model_output_and_accumulates_runs():
    model = Net().eval()
    interp = ProfilingInterpreter(model)
    x = net_input()
    with torch.inference_mode():
        for _ in range(3):
            torch.testing.assert_close(interp.run(x), model(x))
    assert interp.node_seconds().shape == (3, 14)
    assert len(interp.total_runtime_sec) == 3
    assert len(interp.runtimes_sec) == 14
    assert all(len(v) == 3 for v in interp.runtimes_sec.values())


def test_summary_has_the_tutorial_columns_and_sorts():
    interp = ProfilingInterpreter(torch.nn.Sequential(torch.nn.ReLU(), Spin(500_000)))
    interp.run(torch.zeros(4))
    lines = interp.summary(should_sort=True).splitlines()
    assert lines[0].split("  ")[0] == "Op type"
    for column in ("Op type", "Op", "Average runtime (s)", "Pct total runtime"):
        assert column in lines[0]
    assert lines[2].split()[1] == "spin"  # the spinning node is first when sorted
    unsorted = interp.summary().splitlines()
    assert [line.split()[1] for line in unsorted[2:]] == ["_0", "spin"]


def test_summary_before_any_run_says_so():
    assert "no runs recorded yet" in ProfilingInterpreter(torch.nn.Sequential(torch.nn.ReLU())).summary()


def test_timed_interval_excludes_argument_fetching():
    interp = ProfilingInterpreter(torch.nn.Sequential(Spin(200_000)))
    interp.run(torch.zeros(1))
    seconds = interp.node_seconds()[0, 0]
    assert seconds >= 200e-6
