"""Tests for pyfxprof.capture.call_dims: a Dynamo graph node's call with its dynamic sizes as
expressions, evaluated at other sizes, against the call the analysis run records when the
graph is captured at those sizes (the known truth), over generated models, lengths and
dtypes."""

import json

import pytest
import torch

from pyfxprof.capture.call_dims import call_at, call_dims, size_symbols
from pyfxprof.capture.shape_run import analyse


class Attend(torch.nn.Module):
    """A query over a memory of any length: view with size arguments, transpose, matmul,
    softmax, cat and narrow (sizes as expressions: the cat's length + 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.q = torch.nn.Linear(8, 8)

    def forward(self, x, mem):
        heads = mem.view(mem.shape[0], mem.shape[1], 2, 4).transpose(1, 2)
        longer = torch.cat([mem, x], dim=1)
        scores = (self.q(x) @ longer.transpose(1, 2)).softmax(-1)
        return scores @ longer + heads.sum() + longer.narrow(1, 1, mem.shape[1]).mean()


def _captured(model, x, mem):
    """(the graph Dynamo makes of model(x, mem) with mem's sizes dynamic, its flat inputs)."""
    import torch._dynamo
    torch._dynamo.reset()
    found = []

    def backend(gm, inputs):
        found.append((gm, inputs))
        return gm
    torch._dynamo.mark_dynamic(mem, 1)
    torch.compile(model, backend=backend, fullgraph=True)(x, mem)
    gm, inputs = found[0]
    return gm, inputs


def _flat(gm, model, x, mem):
    """The graph's inputs for a call on (x, mem): parameters, tensors and mem's length."""
    values = []
    for node in (n for n in gm.graph.nodes if n.op == "placeholder"):
        name = node.target.lower()
        if isinstance(node.meta.get("example_value"), torch.SymInt):
            values.append(mem.shape[1])
        elif "weight" in name:
            values.append(model.q.weight)
        elif "bias" in name:
            values.append(model.q.bias)
        elif "mem" in name or "args_1" in name:
            values.append(mem)
        else:
            values.append(x)
    return values


def _strip(spec: str) -> dict:
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "range"}
        return [strip(v) for v in value] if isinstance(value, list) else value
    return strip(json.loads(spec))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("first,lengths", [(4, [5, 9]), (7, [3, 12, 30]), (16, [2, 17])])
def test_the_call_at_other_sizes_is_the_call_recorded_at_them(dtype, first, lengths):
    torch.manual_seed(0)
    model = Attend().to(dtype).eval()
    x = torch.randn(2, 1, 8, dtype=dtype)
    gm, _ = _captured(model, x, torch.randn(2, first, 8, dtype=dtype))
    names, positions = size_symbols(gm)
    assert len(names) == 1 and positions
    with torch.no_grad():
        _, recorded = analyse(gm, tuple(_flat(gm, model, x, torch.randn(2, first, 8, dtype=dtype))))
        nodes = {n.name: n for n in gm.graph.nodes}
        dynamic = [name for name in recorded if call_dims(nodes[name])]
        assert dynamic, "no node depends on the memory's length"
        for length in lengths:
            _, truth = analyse(gm, tuple(_flat(gm, model, x,
                                               torch.randn(2, length, 8, dtype=dtype))))
            for name, info in recorded.items():
                at = call_at(info["call_args"], call_dims(nodes[name]), {names[0]: length})
                assert _strip(at) == _strip(truth[name]["call_args"]), (name, length)
    torch._dynamo.reset()


def test_a_static_graph_has_no_size_symbols_and_no_dims():
    gm = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()))
    assert size_symbols(gm) == ([], [])
    assert all(call_dims(n) == "" for n in gm.graph.nodes)


def test_an_expression_of_a_symbol_not_given_raises_key_error():
    spec = '{"args": [{"tensor": [3], "dtype": "float32", "stride": [1], "device": "cpu"}], "kwargs": {}}'
    dims = '{"args": [{"tensor": ["s1 + 2"], "stride": [1]}], "kwargs": {}}'
    assert json.loads(call_at(spec, dims, {"s1": 5}))["args"][0]["tensor"] == [7]
    with pytest.raises(KeyError):
        call_at(spec, dims, {"s0": 5})
    assert call_at(spec, "", {"s0": 5}) == spec
