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
    # 20 ms of spinning over three runs: more than a loaded machine's timeslice can add to the ReLU
    interp = ProfilingInterpreter(torch.nn.Sequential(torch.nn.ReLU(), Spin(20_000_000)))
    for _ in range(3):
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


def test_submodule_lookup_is_outside_the_timed_call():
    relu = torch.nn.ReLU()
    interp = ProfilingInterpreter(torch.nn.Sequential(relu))
    lookups = []
    lookup = interp.fetch_attr
    interp.fetch_attr = lambda target: lookups.append(target) or lookup(target)
    interp.run(torch.zeros(1))
    assert lookups == []  # the instrumented graph calls the submodule it was built with
    assert interp._calls.target(0) is relu and not interp._takes_target[0]  # looked up before


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


def test_without_overrides_run_executes_the_instrumented_graph():
    interp = ProfilingInterpreter(Net())
    assert not interp.interpreted
    with torch.inference_mode():
        interp.run(net_input())
    assert interp.node_seconds().shape == (1, 14)
    assert interp.timings().between_nodes.shape == (1,)


def test_an_overridden_run_node_interprets_every_node_through_it():
    seen = []

    class Watching(ProfilingInterpreter):
        def run_node(self, n):
            seen.append(n.name)
            return super().run_node(n)

    model, x = Net().eval(), net_input()
    interp = Watching(model)
    assert interp.interpreted
    with torch.inference_mode():
        torch.testing.assert_close(interp.run(x), model(x))
        interp.run(x)
    assert len(seen) == 2 * len(interp.graph.nodes)
    assert interp.node_seconds().shape == (2, 14) and len(interp.total_runtime_sec) == 2


def test_an_overridden_fetch_of_arguments_is_used():
    def doubled(interpreter, n):
        args, kwargs = torch.fx.Interpreter.fetch_args_kwargs_from_env(interpreter, n)
        return tuple(a * 2 if isinstance(a, torch.Tensor) else a for a in args), kwargs

    class Doubling(ProfilingInterpreter):
        fetch_args_kwargs_from_env = doubled

    class Reference(torch.fx.Interpreter):
        fetch_args_kwargs_from_env = doubled

    model, x = torch.nn.Sequential(torch.nn.ReLU()), torch.tensor([1.0, -1.0])
    out = Doubling(model).run(x)
    torch.testing.assert_close(out, Reference(torch.fx.symbolic_trace(model)).run(x))
    torch.testing.assert_close(out, torch.tensor([4.0, 0.0]))  # doubled at relu and output


def test_a_raising_node_leaves_the_run_out_and_the_next_runs_count():
    interp = ProfilingInterpreter(_Failing())
    try:
        interp.run(torch.tensor([5.0]))
    except ValueError:
        pass
    interp.run(torch.tensor([-1.0]))
    assert interp.node_seconds().shape == (1, len(interp.timed))
    assert interp.incomplete_runs == 1


def _fail_on_positive(x):
    if float(x.sum()) > 0:
        raise ValueError("positive input")
    return x


torch.fx.wrap("_fail_on_positive")


class _Failing(torch.nn.Module):
    def forward(self, x):
        return _fail_on_positive(torch.relu(x) - 1)
