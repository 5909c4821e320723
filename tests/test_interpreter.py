"""Tests of ProfilingInterpreter: the FX tutorial's API on native timers."""

import torch

from pyfxprof import ProfilingInterpreter, _C
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


def test_submodule_lookup_is_outside_the_timed_interval():
    interp = ProfilingInterpreter(torch.nn.Sequential(torch.nn.ReLU()))
    lookup = interp.fetch_attr

    def slow_lookup(target):  # a submodule lookup costing 1 ms
        _C._spin_ns(1_000_000)
        return lookup(target)

    interp.fetch_attr = slow_lookup
    interp.run(torch.zeros(1))
    assert interp.node_seconds()[0, 0] < 500e-6


def test_an_overridden_call_module_is_timed_whole():
    class Slow(ProfilingInterpreter):
        def call_module(self, target, args, kwargs):
            _C._spin_ns(300_000)
            return super().call_module(target, args, kwargs)

    interp = Slow(torch.nn.Sequential(torch.nn.ReLU()))
    out = interp.run(torch.tensor([-1.0, 2.0]))
    torch.testing.assert_close(out, torch.tensor([0.0, 2.0]))
    assert interp.node_seconds()[0, 0] >= 300e-6


def test_every_timed_op_kind_still_computes_the_model():
    class Mixed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = torch.nn.Parameter(torch.tensor(2.0))
            self.relu = torch.nn.ReLU()

        def forward(self, x):
            return torch.add(self.relu(x), 1).mul(self.scale)

    model, x = Mixed(), torch.tensor([-1.0, 3.0])
    interp = ProfilingInterpreter(model)
    torch.testing.assert_close(interp.run(x), model(x))
    assert {n.op for n in interp.timed} == {"get_attr", "call_module", "call_function",
                                            "call_method"}
    assert interp.node_seconds().shape == (1, 4)
