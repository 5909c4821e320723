"""Tests of FLOPs per node from the analysis run and achieved FLOP/s in the tables."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.capture.flops import FlopMeter
from pyfxprof.data.units import format_flops
from tests.views.test_report import table_rows

# Linear: 2 * in * out * batch. Conv2d: 2 * (in_channels * kh * kw) * out_channels * output
# pixels * batch; 3 -> 4 channels, 3x3 kernel, 10x10 input -> 8x8 output, batch 2.
LINEAR_FLOPS = 2 * 8 * 16 * 5
CONV_FLOPS = 2 * (3 * 3 * 3) * 4 * (8 * 8) * 2


def test_meter_counts_linear_and_conv_like_hand_computation():
    with FlopMeter() as meter:
        nn.Linear(8, 16)(torch.zeros(5, 8))
        after_linear = meter.total()
        nn.Conv2d(3, 4, 3)(torch.zeros(2, 3, 10, 10))
    assert after_linear == LINEAR_FLOPS == 1280
    assert meter.total() - after_linear == CONV_FLOPS == 27648


def test_attention_fast_path_is_counted_and_restored():
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
    x = torch.randn(2, 5, 8)
    with torch.inference_mode(), FlopMeter() as meter:
        layer(x)
    # q, k, v and out projections, two feed-forward linears, q @ k^T and attention @ v.
    projections = 4 * (2 * 8 * 8 * 10) + 2 * (2 * 8 * 16 * 10)
    attention = 2 * 2 * (2 * 5 * 5 * 4 * 2)
    assert meter.total() == projections + attention
    assert torch.backends.mha.get_fastpath_enabled()


@pytest.mark.parametrize("capture", ["fx", "hooks"])
def test_profile_has_flops_per_node_and_model_flops(capture):
    class ConvHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.relu = nn.ReLU()
            self.head = nn.Linear(4 * 8 * 8, 16)

        def forward(self, x):
            return self.head(torch.flatten(self.relu(self.conv(x)), 1))

    prof = pyfxprof.profile(ConvHead(), (torch.randn(2, 3, 10, 10),), runs=2, warmup=0,
                            progress=False, capture=capture)
    flops = dict(zip(prof.nodes["name"], prof.nodes["flops"]))
    assert prof.nodes["flops"].dtype == np.int64
    assert flops["conv"] == CONV_FLOPS and flops["relu"] == 0
    assert flops["head"] == 2 * (4 * 8 * 8) * 16 * 2
    assert prof.meta["flops"] == CONV_FLOPS + flops["head"]
    assert format_flops(prof.meta["flops"]) in prof.table().splitlines()[1]


def test_flop_per_s_column_is_flops_over_median_seconds():
    nodes = pd.DataFrame({"index": [0, 1], "name": ["mm", "relu"],
                          "op": ["call_function"] * 2, "target": ["torch.mm", "torch.relu"],
                          "module_path": ["", ""], "module_type": ["Net"] * 2,
                          "module_stack": [(), ()], "flops": np.array([4000, 0], np.int64)})
    prof = pyfxprof.Profile(nodes, np.array([[2000, 10], [2000, 30]]), np.array([2100, 2100]))
    rows = table_rows(prof.table(sort_by="order", columns=["name", "flops", "flop_per_s"]))
    assert rows == [["mm", "4.00k", "2.00G"], ["relu", "0", "-"]]
    group = table_rows(prof.table(group_by="module_type", columns=["group", "flops",
                                                                    "flop_per_s"]))
    assert group == [["Net", "4.00k", "1.98G"]]  # 4000 FLOP over the median of 2010, 2030 ns
