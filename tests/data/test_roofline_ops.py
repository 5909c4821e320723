"""Tests of data.roofline_ops: which op kind (fixed cost) a node is."""

import pytest

from pyfxprof.data.roofline_ops import KINDS, op_kind


@pytest.mark.parametrize("target, module_type, kind", [
    ("layer1.0.conv1", "Conv2d", "conv"), ("torch.conv2d", "", "conv"),
    ("maxpool", "MaxPool2d", "pool"), ("torch.nn.functional.adaptive_avg_pool2d", "", "pool"),
    ("bn1", "BatchNorm2d", "norm"), ("torch.nn.functional.layer_norm", "", "norm"),
    ("torch.softmax", "", "softmax"), ("torch.nn.functional.embedding", "", "embedding"),
    ("fc", "Linear", "matmul"), ("torch.matmul", "", "matmul"), ("torch.mm", "", "matmul"),
    ("torch.addmm", "", "matmul"),
    ("torch.nn.functional.scaled_dot_product_attention", "", "matmul"),
    ("sum", "", "reduction"), ("torch.mean", "", "reduction"),
    ("torch.cat", "", "copy"), ("view", "", "copy"), ("<built-in function getitem>", "", "copy"),
    ("to", "", "copy"), ("flatten", "", "copy"),
    ("<built-in function add>", "", "elementwise"), ("torch.add", "", "elementwise"),
    ("torch.tanh", "", "elementwise"), ("relu", "ReLU", "elementwise"),
])
def test_op_kind(target, module_type, kind):
    assert op_kind(target, module_type) == kind
    assert kind in KINDS
