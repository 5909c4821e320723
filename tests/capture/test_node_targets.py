"""FX node targets by op (capture/node_targets.py)."""

from __future__ import annotations

import pytest
import torch
import torch.fx as fx

from pyfxprof.capture.node_targets import target_module, target_path


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(2, 2))
        self.scale = torch.nn.Parameter(torch.ones(2))

    def forward(self, x):
        return torch.relu(self.block(x) * self.scale).sum(dim=0)


def _nodes(op: str) -> list[fx.Node]:
    gm = fx.symbolic_trace(_Net())
    return [node for node in gm.graph.nodes if node.op == op]


def test_named_targets_are_the_dotted_names_fx_keeps():
    assert [target_path(n) for n in _nodes("call_module")] == ["block.0"]
    assert [target_path(n) for n in _nodes("get_attr")] == ["scale"]
    assert [target_path(n) for n in _nodes("call_method")] == ["sum"]


def test_a_call_module_node_gives_the_module_it_calls():
    net = _Net()
    gm = fx.symbolic_trace(net)
    node = next(n for n in gm.graph.nodes if n.op == "call_module")
    assert target_module(gm, node) is gm.get_submodule("block.0")
    assert isinstance(target_module(gm, node), torch.nn.Linear)


def test_a_function_target_is_refused_with_the_node_named():
    node = _nodes("call_function")[0]
    with pytest.raises(TypeError, match=f"FX node {node.name} \\(call_function\\)"):
        target_path(node)
