"""Which Python functions spend the time outside the graph (cProfile, untimed)."""

import torch

from pyfxprof.run import python_breakdown as breakdown
from pyfxprof.run.python_breakdown import describe_entry, python_breakdown


def _mask(x):
    """Python the graph does not run: a loop of small tensor ops and plain Python."""
    total = 0
    for i in range(200):
        total += i * i
    return x + total * 0


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(_mask(x))


def test_functions_only_the_call_runs_are_named_with_their_origin_and_line():
    net, x = Net(), torch.ones(2, 8)
    rows = python_breakdown(lambda: net(x), lambda: net.fc(x))
    by_name = {row["function"]: row for row in rows}
    assert {"_mask", "Net.forward"} <= set(by_name)
    assert by_name["_mask"]["origin"] == "model" and by_name["_mask"]["calls"] == 1
    assert by_name["_mask"]["file_line"].endswith(
        f"test_python_breakdown.py:{_mask.__code__.co_firstlineno}")
    assert by_name["Net.forward"]["self_ns"] > 0
    # the graph's own calls cancel: Linear.forward runs on both sides, so is not named
    assert "Linear.forward" not in by_name
    assert rows == sorted(rows, key=lambda row: -row["self_ns"])


def test_an_op_is_never_a_functions_self_time():
    def heavy(x):
        return (x * 3.0) @ x  # operators: made visible calls, so not heavy's self time

    x = torch.randn(256, 256)
    rows = python_breakdown(lambda: heavy(x), lambda: None)
    by_name = {row["function"]: row for row in rows}
    ops = sum(row["self_ns"] for row in rows if row["function"] != "test_an_op_is_never_a_"
              "functions_self_time.<locals>.heavy")
    assert by_name["test_an_op_is_never_a_functions_self_time.<locals>.heavy"]["self_ns"] < ops


def test_the_rest_beyond_the_kept_functions_is_one_entry(monkeypatch):
    monkeypatch.setattr(breakdown, "KEPT_FUNCTIONS", 2)
    net, x = Net(), torch.ones(2, 8)
    rows = python_breakdown(lambda: net(x), lambda: None)
    assert len(rows) == 3 and rows[-1]["function"].startswith("(other ")


def _set_up_once(state):
    """One-time code of the first call (a lazy set-up)."""
    state["ready"] = sum(i * i for i in range(200))


def test_a_first_calls_one_time_code_is_left_out():
    """The first profiled call warms the call: what only it runs is not the call's Python."""
    net, x, state = Net(), torch.ones(2, 8), {}

    def call():
        if "ready" not in state:
            _set_up_once(state)
        return net(x)

    by_name = {row["function"] for row in python_breakdown(call, lambda: net.fc(x))}
    assert "_mask" in by_name and "_set_up_once" not in by_name and state["ready"]


def test_entries_are_described_by_name_origin_and_line():
    assert describe_entry("<built-in method builtins.isinstance>") == (
        "builtins.isinstance", "builtin", "")
    assert describe_entry("<method 'mul' of 'torch._C.TensorBase' objects>")[1] == "torch (C)"
    name, origin, line = describe_entry(torch.nn.Module.__call__.__code__)
    assert origin == "torch" and line.startswith("torch/nn/modules/module.py:")
