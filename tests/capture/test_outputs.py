"""Tests of pyfxprof.capture.outputs: dataclass and pytree outputs flattened and rebuilt, and
profile(backward=True) of models returning them, on the fx and dynamo rungs."""

import dataclasses
from collections import namedtuple

import pytest
import torch
import torch.fx as fx

import pyfxprof
from pyfxprof.capture.outputs import flatten, unfold_dataclass_nodes


@dataclasses.dataclass
class Out:
    loss: torch.Tensor
    logits: torch.Tensor


@dataclasses.dataclass(frozen=True)
class Frozen:
    parts: tuple
    note: str = "kept"


Pair = namedtuple("Pair", "loss logits")


def test_flatten_reaches_into_dataclasses_and_rebuilds_them():
    value = {"a": Out(1, [2, Frozen((3, 4))]), "b": Pair(5, 6)}
    leaves, rebuild = flatten(value)
    assert leaves == [1, 2, 3, 4, "kept", 5, 6]
    rebuilt = rebuild([10, 20, 30, 40, "new", 50, 60])
    assert rebuilt == {"a": Out(10, [20, Frozen((30, 40), "new")]), "b": Pair(50, 60)}
    assert value["a"] == Out(1, [2, Frozen((3, 4))])  # the original untouched


def test_an_fx_dataclass_construction_is_unfolded_into_its_argument_nodes():
    class Model(torch.nn.Module):
        def forward(self, x):
            return Out((x * 2).sum(), x + 1)
    graph = fx.symbolic_trace(Model()).graph
    output = next(node for node in graph.nodes if node.op == "output")
    leaves, _ = flatten(unfold_dataclass_nodes(output.args[0]))
    assert [leaf.name for leaf in leaves] == ["sum_1", "add"]


class ReturnsDataclass(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        return Out(y.pow(2).mean(), y)


class ReturnsNested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        return {"out": Pair(y.relu().sum(), y)}


@pytest.mark.parametrize("capture", ["fx", "dynamo"])
@pytest.mark.parametrize("model, loss_fn", [
    (ReturnsDataclass, None), (ReturnsNested, lambda out: out["out"].loss)])
def test_backward_through_dataclass_and_nested_outputs(capture, model, loss_fn):
    net, x = model(), torch.randn(2, 4)
    weight = net.linear.weight.detach().clone()
    prof = pyfxprof.profile(net, (x,), runs=3, warmup=1, backward=True, loss_fn=loss_fn,
                            capture=capture, progress=False)
    assert prof.meta["capture_mode"] == capture
    assert prof.backward_samples is not None
    linear = prof.nodes.index[prof.nodes["module_path"] == "linear"][0]
    assert (prof.backward_samples[:, linear] > 0).all()  # the Linear's backward was timed
    assert torch.equal(net.linear.weight, weight) and net.linear.weight.grad is None


def test_the_profiler_times_the_backward_of_a_dataclass_output():
    net = ReturnsDataclass()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    with pyfxprof.Profiler(net, backward=True) as p:
        for _ in range(6):
            optimizer.zero_grad()
            p.model(torch.randn(2, 4)).loss.backward()
            optimizer.step()
            p.step()
    prof = p.profiles[-1]
    assert prof.backward_samples is not None and "backward_note" not in prof.meta
    linear = prof.nodes.index[prof.nodes["module_path"] == "linear"][0]
    assert (prof.backward_samples[:, linear] > 0).all()
