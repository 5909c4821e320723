"""Tests of pyfxprof.capture.tracing and pyfxprof.capture.node_table: leaves, module stacks, edges, errors."""

import functools

import pytest
import torch
import torch.fx as fx

import pyfxprof

from pyfxprof.capture.tracing import ProfilingTracer, capture, timed_nodes
from pyfxprof.errors import PyfxprofError
from pyfxprof.capture.node_table import nodes_frame
from tests.models import Block, DataDependent, Net


def test_nn_modules_are_leaves_and_every_op_kind_is_timed():
    gm = capture(Block()).graph_module
    ops = [(n.op, str(n.target)) for n in timed_nodes(gm.graph)]
    assert ops == [("call_module", "conv"), ("call_module", "relu"),
                   ("call_function", "<built-in function add>"), ("get_attr", "scale"),
                   ("call_method", "mul")]


def test_nodes_frame_has_module_paths_stacks_types_and_edges():
    gm = capture(Net()).graph_module
    frame = nodes_frame(timed_nodes(gm.graph), gm).set_index("name")
    conv = frame.loc["block1_conv"]
    assert conv.module_path == "block1.conv" and conv.module_type == "Conv2d"
    assert conv.module_stack == ("block1", "block1.conv")
    assert conv.target == "block1.conv" and conv.inputs == ("x",)
    add = frame.loc["add"]
    assert add.module_path == "block1" and add.module_type == "Block"
    assert add.target == "_operator.add"
    assert add.inputs == ("block1_relu", "x")
    flatten = frame.loc["flatten"]
    assert flatten.module_path == "" and flatten.module_type == "Net"
    assert flatten.module_stack == ()
    assert list(frame["index"]) == list(range(len(frame)))


def test_leaf_modules_by_name_and_type():
    gm = capture(Net(), leaf_modules=["block1"]).graph_module
    targets = [n.target for n in timed_nodes(gm.graph) if n.op == "call_module"]
    assert "block1" in targets and "block1.conv" not in targets
    gm = capture(Net(), leaf_modules=[Block]).graph_module
    targets = [n.target for n in timed_nodes(gm.graph) if n.op == "call_module"]
    assert "block1" in targets and "block2" in targets


def test_torchvision_ops_modules_are_leaves():
    torchvision_ops = pytest.importorskip("torchvision.ops")
    module = torchvision_ops.Permute([0, 2, 3, 1])
    assert ProfilingTracer().is_leaf_module(module, "permute")


def test_untraceable_model_gives_one_line_reason():
    with pytest.raises(PyfxprofError) as info:
        capture(DataDependent())
    message = str(info.value)
    assert "torch.fx cannot trace DataDependent" in message and "\n" not in message
    assert "leaf_modules" in message


def test_non_module_is_refused():
    with pytest.raises(PyfxprofError, match="expected a torch.nn.Module, got function"):
        capture(lambda x: x)


def test_capture_leaves_the_model_unchanged():
    model = Net()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    gm = capture(model).graph_module
    assert isinstance(gm, fx.GraphModule) and not isinstance(model, fx.GraphModule)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, before[key])


def test_a_buffer_changed_in_place_is_in_the_graph_not_changed_at_trace_time():
    from tests.capture.test_model_state import InPlaceState
    model = InPlaceState()
    gm = capture(model).graph_module
    assert model.count.item() == 0 and model.running.tolist() == [1.0] * 4
    assert [n.target for n in gm.graph.nodes if n.op == "call_method"][:2] == ["add_", "mul_"]
    gm(torch.randn(2, 4))  # the graph changes the model's own buffers, as forward does
    assert model.count.item() == 1


def test_a_forward_assigning_a_buffer_is_refused_at_the_module_that_assigns_it():
    from tests.capture.test_model_state import Counting
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), Counting())
    steps = model[1].steps
    with pytest.raises(PyfxprofError, match=r"cannot trace 1 \(Counting\): RuntimeError: "
                                            "forward assigns 'steps'"):
        capture(model)
    assert model[1].steps is steps and steps.item() == 0  # bound back, unchanged
    leafed = capture(model, mode="fx+leaf")
    assert leafed.mode == "fx+leaf" and leafed.notes[-1].endswith("made 1 a leaf")


def test_tensor_constants_of_forward_go_on_the_graph_module_not_the_model():
    class WithConstant(torch.nn.Module):
        def forward(self, x):
            return x + torch.tensor([1.0, 2.0])

    model = WithConstant()
    attributes = dict(vars(model))
    gm = capture(model).graph_module
    assert vars(model) == attributes and not hasattr(model, "_tensor_constant0")
    torch.testing.assert_close(gm(torch.zeros(2)), torch.tensor([1.0, 2.0]))
    pyfxprof.profile(model, (torch.zeros(2),), runs=2, warmup=0, progress=False)
    assert vars(model) == attributes


def _returns_as_is(forward):
    @functools.wraps(forward)
    def wrapper(*args, **kwargs):
        return forward(*args, **kwargs)
    return wrapper


class DecoratedForward(torch.nn.Module):
    """A forward taking **kwargs wrapped like transformers' @can_return_tuple (by a wrapper
    taking *args): FX unwraps it to read the signature, then patches the wrapper."""

    @_returns_as_is
    def forward(self, x, mask=None, **kwargs):
        return x + 1


def test_a_forward_wrapped_by_a_decorator_is_named_as_the_reason_fx_fails():
    with pytest.raises(PyfxprofError, match=r"DecoratedForward \(its forward is wrapped by "
                                            r"_returns_as_is.<locals>.wrapper, which takes \*args\)"):
        capture(DecoratedForward(), "fx")
