"""Tests of pyfxprof.capture.node_table: the nodes table of an FX capture or of hooked module
calls (identity columns, module path, type and stack, graph edges)."""

import operator

import torch
import torch.fx as fx

from pyfxprof.capture.node_table import (COLUMNS, module_calls_frame, module_stack, nodes_frame,
                                         target_name)
from pyfxprof.capture.tracing import capture, timed_nodes
from pyfxprof.data.profile import NODE_COLUMNS


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.block(x).sigmoid())


class Unnamed:
    def __call__(self, value):
        return value

    def __str__(self):
        return "unnamed callable"


def net_frame():
    gm = capture(Net()).graph_module
    return nodes_frame(timed_nodes(gm.graph), gm), gm


def test_nodes_frame_rows_follow_execution_order_with_identity_and_edges():
    frame, _ = net_frame()
    assert list(frame.columns) == COLUMNS and set(NODE_COLUMNS) <= set(frame.columns)
    assert frame["index"].tolist() == [0, 1, 2, 3, 4]
    assert frame["name"].tolist() == ["block_lin", "relu", "add", "sigmoid", "head"]
    assert frame["op"].tolist() == ["call_module", "call_function", "call_function",
                                    "call_method", "call_module"]
    assert frame["inputs"].tolist() == [("x",), ("block_lin",), ("relu", "x"), ("add",),
                                        ("sigmoid",)]


def test_module_path_type_and_stack_of_nested_traced_through_and_root_nodes():
    frame, _ = net_frame()
    rows = frame.set_index("name")
    assert rows.loc["block_lin", ["module_path", "module_type"]].tolist() == ["block.lin",
                                                                             "Linear"]
    assert rows.loc["block_lin", "module_stack"] == ("block", "block.lin")
    # a function called inside Block.forward belongs to Block (traced through, so the
    # GraphModule keeps only an empty container: the type comes from the tracer's record)
    assert rows.loc["relu", ["module_path", "module_type"]].tolist() == ["block", "Block"]
    assert rows.loc["relu", "module_stack"] == ("block",)
    # the root's own code: no path, the root's type, an empty stack
    assert rows.loc["sigmoid", ["module_path", "module_type"]].tolist() == ["", "Net"]
    assert rows.loc["sigmoid", "module_stack"] == ()


def test_target_names_are_readable():
    frame, gm = net_frame()
    assert frame["target"].tolist() == ["block.lin", "torch.relu", "_operator.add", "sigmoid",
                                        "head"]
    graph = fx.Graph()
    x = graph.placeholder("x")
    unnamed = graph.call_function(operator.neg, (x,))
    unnamed.target = Unnamed()  # no qualified name: its str()
    assert target_name(unnamed) == "unnamed callable"
    assert target_name(graph.call_function(operator.mul, (x, x))) == "_operator.mul"


def test_module_stack_of_a_plain_symbolic_trace_falls_back_to_the_submodule():
    gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.ReLU()))
    call = next(n for n in gm.graph.nodes if n.op == "call_module")
    call.meta.pop("nn_module_stack", None)
    assert module_stack(call, gm) == (("0",), "0", "ReLU")


def test_module_calls_frame_names_repeats_like_fx_and_the_root_after_its_type():
    frame = module_calls_frame([("", "Net"), ("enc.layer", "Layer"), ("enc.layer", "Layer"),
                                ("head", "Linear")], "Net")
    assert list(frame.columns) == COLUMNS
    assert frame["name"].tolist() == ["Net", "enc_layer", "enc_layer_1", "head"]
    assert frame["target"].tolist() == ["Net", "enc.layer", "enc.layer", "head"]
    assert frame["module_stack"].tolist() == [(), ("enc", "enc.layer"), ("enc", "enc.layer"),
                                              ("head",)]
    assert set(frame["op"]) == {"call_module"} and set(frame["inputs"]) == {()}


def test_empty_inputs_give_empty_frames_with_every_column():
    assert list(module_calls_frame([], "Net").columns) == COLUMNS
    gm = fx.symbolic_trace(torch.nn.Identity())
    assert nodes_frame([], gm).empty and list(nodes_frame([], gm).columns) == COLUMNS
