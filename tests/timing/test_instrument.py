"""Tests of the codegen pass: timed(k, ...) for each timed node k, outputs unchanged, the original untouched."""

import operator

import numpy as np
import torch
import torch.fx as fx

from pyfxprof import _C
from pyfxprof.capture.tracing import capture, timed_nodes
from pyfxprof.timing.instrument import TIMED_GLOBAL, instrument
from tests.models import Net, net_input


def test_instrumented_module_gives_the_same_outputs_and_one_duration_per_node():
    model = Net().eval()
    gm = capture(model).graph_module
    n = len(timed_nodes(gm.graph))
    table = _C.SampleTable(n)
    instrumented = instrument(gm, table)
    x = net_input()
    with torch.inference_mode():
        table.begin_run()
        torch.testing.assert_close(instrumented(x), model(x))
        table.end_run()
    samples = table.take()["samples"]
    assert samples.shape == (1, n) and (samples >= 0).all()


def test_original_graph_module_is_not_changed():
    gm = capture(Net()).graph_module
    code_before = gm.code
    instrument(gm, _C.SampleTable(100))
    assert gm.code == code_before and "pyfxprof__C_timed" not in gm.code


def test_each_timed_node_calls_its_timed_call_and_nothing_else_is_added():
    gm = capture(Net()).graph_module
    n = len(timed_nodes(gm.graph))
    instrumented = instrument(gm, _C.SampleTable(n))
    body = [line for line in instrumented.code.splitlines()[1:] if "=" in line]
    calls = [line.split("pyfxprof__C_timed(")[1] for line in body if "pyfxprof__C_timed(" in line]
    assert [int(call.split(",")[0].rstrip(")")) for call in calls] == list(range(n))
    assert len(instrumented.graph.nodes) == len(gm.graph.nodes)


def test_methods_keyword_arguments_and_attributes_are_timed_like_calls():
    class Mixed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = torch.nn.Parameter(torch.tensor(2.0))

        def forward(self, x):
            return torch.add(x, 1, alpha=3).mul(self.scale)[0]

    model, x = Mixed(), torch.tensor([-1.0, 3.0])
    gm = fx.symbolic_trace(model)
    table = _C.SampleTable(len(timed_nodes(gm.graph)))
    table.begin_run()
    with torch.no_grad():
        torch.testing.assert_close(instrument(gm, table)(x), model(x))
    table.end_run()
    assert {n.op for n in timed_nodes(gm.graph)} == {"call_function", "call_method", "get_attr"}
    assert (table.take()["samples"] >= 0).all()


def test_a_failing_node_raises_its_own_error_and_records_nothing_for_itself():
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(operator.truediv, (x, 0)))
    table = _C.SampleTable(1)
    table.begin_run()
    try:
        instrument(fx.GraphModule(torch.nn.Module(), graph), table)(1)
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("the node's ZeroDivisionError was lost")
    table.end_run()
    np.testing.assert_array_equal(table.take()["samples"], [[-1]])


def test_the_generated_forward_loads_timed_as_a_fast_local():
    gm = capture(Net()).graph_module
    instrumented = instrument(gm, _C.SampleTable(len(timed_nodes(gm.graph))))
    assert TIMED_GLOBAL not in instrumented.forward.__code__.co_names  # no global lookup
    timed = instrumented.forward.__kwdefaults__[TIMED_GLOBAL]
    assert timed.__name__ == "timed" and timed.__module__ == "pyfxprof._C"


def test_a_forward_with_varargs_and_keywords_takes_timed_after_them():
    class Varargs(torch.nn.Module):
        def forward(self, *xs, **options):
            return xs[0] * 2 + xs[1]

    gm = fx.symbolic_trace(Varargs())
    table = _C.SampleTable(len(timed_nodes(gm.graph)))
    table.begin_run()
    with torch.no_grad():
        out = instrument(gm, table)(torch.ones(2), torch.ones(2))
    torch.testing.assert_close(out, torch.full((2,), 3.0))
    assert "*xs, pyfxprof__C_timed=pyfxprof__C_timed, **options)" in instrument(gm, table).code


def test_a_global_named_otherwise_falls_back_to_the_global_lookup(monkeypatch):
    import pyfxprof.timing.instrument as instrument_module
    monkeypatch.setattr(instrument_module, "TIMED_GLOBAL", "not_what_fx_named_it")
    gm = capture(Net()).graph_module
    instrumented = instrument(gm, _C.SampleTable(len(timed_nodes(gm.graph))))
    assert instrumented.forward.__kwdefaults__ is None  # the global lookup, as FX generates
    assert TIMED_GLOBAL in instrumented.forward.__code__.co_names
