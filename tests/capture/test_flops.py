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


# --- vector FLOPs (capture.flops.VECTOR_FORMULAS), hand counts ---------------------------------

F = torch.nn.functional
VECTOR_CASES = [  # (what, call, FLOPs by hand)
    ("relu 5x8: 1 per output", lambda: torch.relu(torch.ones(5, 8)), 40),
    ("broadcast add 4x1 + 1x6: 1 per output", lambda: torch.ones(4, 1) + torch.ones(1, 6), 24),
    ("in-place mul_ 3x3", lambda: torch.ones(3, 3).mul_(2.0), 9),
    ("gelu 2x10", lambda: F.gelu(torch.ones(2, 10)), 20),
    ("sum 5x8: 1 per input", lambda: torch.ones(5, 8).sum(), 40),
    ("mean over a dim 4x6", lambda: torch.ones(4, 6).mean(dim=1), 24),
    ("var 4x5: 2 per input", lambda: torch.ones(4, 5).var(dim=1), 40),
    ("softmax 3x7: 5 per input", lambda: torch.softmax(torch.ones(3, 7), -1), 105),
    ("layer_norm 2x4x8: 8 per input", lambda: F.layer_norm(torch.ones(2, 4, 8), (8,)), 512),
    ("eval batch_norm 2x3x4x4: 4 per input", lambda: F.batch_norm(
        torch.ones(2, 3, 4, 4), torch.zeros(3), torch.ones(3), training=False), 384),
    ("max_pool2d k2 on 1x2x6x6: 4 per output", lambda: F.max_pool2d(torch.ones(1, 2, 6, 6), 2),
     72),
    ("avg_pool2d k3 s1 on 1x1x5x5: 9 per output", lambda: F.avg_pool2d(
        torch.ones(1, 1, 5, 5), 3, stride=1), 81),
    ("adaptive_avg_pool2d 1x2x4x4 to 1x1: 1 per input", lambda: F.adaptive_avg_pool2d(
        torch.ones(1, 2, 4, 4), 1), 32),
    ("embedding: bytes only", lambda: F.embedding(torch.tensor([1, 2]), torch.ones(5, 3)), 0),
    ("view, cat and transpose: none", lambda: torch.cat([torch.ones(2, 3).view(3, 2).t()] * 2),
     0),
]


@pytest.mark.parametrize("what, call, expected", VECTOR_CASES, ids=[c[0] for c in VECTOR_CASES])
@pytest.mark.parametrize("inference", [False, True])
def test_vector_flops_match_hand_counts(what, call, expected, inference):
    context = torch.inference_mode() if inference else torch.no_grad()
    with context, FlopMeter() as meter:
        call()
    assert meter.vector_total() == expected
    assert meter.total() == 0  # matrix FLOPs stay torch's
    assert meter.unknown_since(0) == ""


MATRIX_CASES = [  # ops torch.utils.flop_counter has formulas for: the meter's total() is its
    ("mm", lambda: torch.ones(7, 5) @ torch.ones(5, 3)),
    ("bmm", lambda: torch.bmm(torch.ones(2, 4, 5), torch.ones(2, 5, 6))),
    ("linear with bias", lambda: F.linear(torch.ones(3, 8), torch.ones(4, 8), torch.ones(4))),
    ("grouped conv2d", lambda: F.conv2d(torch.ones(1, 4, 6, 6), torch.ones(8, 2, 3, 3),
                                        groups=2)),
    ("conv1d", lambda: F.conv1d(torch.ones(2, 3, 10), torch.ones(5, 3, 3))),
    ("conv3d", lambda: F.conv3d(torch.ones(1, 2, 4, 4, 4), torch.ones(3, 2, 2, 2, 2))),
]


@pytest.mark.parametrize("what, call", MATRIX_CASES, ids=[c[0] for c in MATRIX_CASES])
def test_matrix_flops_are_torch_flop_counters(what, call):
    from torch.utils.flop_counter import FlopCounterMode
    with torch.no_grad():
        with FlopMeter() as meter:
            call()
        with FlopCounterMode(display=False) as reference:
            call()
    assert meter.total() == reference.get_total_flops() > 0


def test_grouped_conv_and_sdpa_match_hand_counts():
    with torch.no_grad(), FlopMeter() as meter:
        F.conv2d(torch.ones(1, 4, 6, 6), torch.ones(8, 2, 3, 3), groups=2)
        conv = meter.total()
        F.scaled_dot_product_attention(*(torch.ones(2, 3, 5, 4) for _ in range(3)))
    # conv: 2 * (in/groups * kh * kw) * out channels * output pixels (4x4)
    assert conv == 2 * (2 * 3 * 3) * 8 * 16
    # attention: q @ k^T and the weighted sum, 2*L*S*E each, per batch and head
    assert meter.total() - conv == 2 * 2 * 3 * 5 * 5 * (4 + 4)


def test_ops_without_a_formula_are_named_not_counted():
    with torch.no_grad(), FlopMeter() as meter:
        torch.relu(torch.ones(3))
        before = meter.unknown_count()
        torch.cdist(torch.ones(2, 3), torch.ones(4, 3))
    assert meter.unknown_since(before) == "aten._cdist_forward"
    assert meter.unknown_since(0) == "aten._cdist_forward"
    assert meter.vector_total() == 3
