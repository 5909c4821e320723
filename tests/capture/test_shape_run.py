"""Tests of the untimed analysis run: shapes, output bytes, and the failing-node message."""

import pytest
import torch
import torch.fx as fx

from pyfxprof.capture.shape_run import analyse, describe, tensor_bytes
from pyfxprof.errors import PyfxprofError


def test_describe_and_bytes_of_nested_values():
    value = (torch.zeros(2, 3), [torch.zeros(4, dtype=torch.int64)], {"k": 1})
    assert describe(value) == "([2, 3] float32, [[4] int64], {k: int})"
    assert tensor_bytes(value) == 2 * 3 * 4 + 4 * 8


def test_resnet18_first_conv_output_bytes_match_hand_computation():
    torchvision = pytest.importorskip("torchvision")
    gm = fx.symbolic_trace(torchvision.models.resnet18().eval())
    with torch.inference_mode():
        _, info = analyse(gm, (torch.zeros(5, 3, 224, 224),))
    # conv1: 64 channels, stride 2 -> 112x112; float32.
    assert info["conv1"]["out_bytes"] == 5 * 64 * 112 * 112 * 4
    assert info["conv1"]["output_shapes"] == "[5, 64, 112, 112] float32"
    assert info["maxpool"]["out_bytes"] == 5 * 64 * 56 * 56 * 4
    assert info["fc"]["out_bytes"] == 5 * 1000 * 4


def test_failure_names_node_and_shapes_in_one_line():
    gm = fx.symbolic_trace(torch.nn.Linear(4, 2))
    with pytest.raises(PyfxprofError) as info:
        analyse(gm, (torch.zeros(3, 5),))
    message = str(info.value)
    assert message.startswith("node 'linear' (call_function torch._C._nn.linear) failed on inputs "
                              "([3, 5] float32")
    assert "\n" not in message
