"""Tests of the module roll-up (group_by="module" at a depth), input-shape grouping and the module
tree, on a synthetic Profile with hand-computed sums."""

import numpy as np
import pandas as pd
import pytest

from pyfxprof.data.profile import Profile
from pyfxprof.data.rollup import inclusive_medians, module_keys
from tests.views.test_report import table_rows

# Per-run samples (ns) of six nodes over three runs; see each test for the sums.
SAMPLES = np.array([[10, 20, 30, 40, 50, 60],
                    [12, 22, 32, 42, 52, 62],
                    [11, 21, 31, 41, 51, 61]], dtype=np.int64)
CONV3 = "([1, 3, 8, 8] float32)"
CONV4 = "([1, 4, 8, 8] float32)"


def make_profile():
    nodes = pd.DataFrame({
        "index": range(6),
        "name": ["conv1", "layer1_0_conv", "add", "layer1_1_conv", "flatten", "fc"],
        "op": ["call_module", "call_module", "call_function", "call_module", "call_function",
               "call_module"],
        "target": ["conv1", "layer1.0.conv", "operator.add", "layer1.1.conv", "torch.flatten",
                   "fc"],
        "module_path": ["conv1", "layer1.0.conv", "layer1.0", "layer1.1.conv", "", "fc"],
        "module_type": ["Conv2d", "Conv2d", "Block", "Conv2d", "Net", "Linear"],
        "module_stack": [("conv1",), ("layer1", "layer1.0", "layer1.0.conv"),
                         ("layer1", "layer1.0"), ("layer1", "layer1.1", "layer1.1.conv"), (),
                         ("fc",)],
        "input_shapes": [CONV3, CONV4, f"({CONV4[1:-1]}, {CONV4[1:-1]})", CONV4, CONV4,
                         "([1, 4] float32)"],
    })
    return Profile(nodes, SAMPLES, SAMPLES.sum(axis=1) + 4, {"model": "Net"})


def grouped(depth, columns=("group", "nodes", "median", "total", "pct_total")):
    text = make_profile().table(group_by="module", depth=depth, sort_by="order",
                                columns=list(columns))
    return table_rows(text)


def test_depth_1_sums_whole_subtrees():
    # layer1 = nodes 1..3: per-run 90, 96, 93 -> median 93, total 279; grand total 648.
    assert grouped(1) == [
        ["conv1", "1", "11 ns", "33 ns", "5.1%"],
        ["layer1", "3", "93 ns", "279 ns", "43.1%"],
        ["(root)", "1", "51 ns", "153 ns", "23.6%"],
        ["fc", "1", "61 ns", "183 ns", "28.2%"],
    ]


def test_depth_2_splits_layer1_into_its_blocks():
    # layer1.0 = nodes 1 and 2: 50, 54, 52 -> median 52, total 156; layer1.1 = node 3.
    assert grouped(2) == [
        ["conv1", "1", "11 ns", "33 ns", "5.1%"],
        ["layer1.0", "2", "52 ns", "156 ns", "24.1%"],
        ["layer1.1", "1", "41 ns", "123 ns", "19.0%"],
        ["(root)", "1", "51 ns", "153 ns", "23.6%"],
        ["fc", "1", "61 ns", "183 ns", "28.2%"],
    ]


def test_depth_3_labels_a_modules_own_nodes_as_self():
    assert [row[0] for row in grouped(3, ("group",))] == [
        "conv1", "layer1.0.conv", "layer1.0 (self)", "layer1.1.conv", "(root)", "fc"]


def test_default_depth_is_1_and_rows_add_up_to_the_total():
    text = make_profile().table(group_by="module", sort_by="order", columns=["group", "cum_pct"])
    assert table_rows(text)[-1] == ["fc", "100.0%"] and len(table_rows(text)) == 4


def test_module_keys_and_inclusive_medians():
    nodes = make_profile().nodes
    assert module_keys(nodes, 2) == ["conv1", "layer1.0", "layer1.0", "layer1.1", "(root)", "fc"]
    medians = inclusive_medians(SAMPLES, list(nodes["module_path"]))
    assert medians == {"": 216.0, "conv1": 11.0, "layer1": 93.0, "fc": 61.0, "layer1.0": 52.0,
                       "layer1.1": 41.0, "layer1.0.conv": 21.0, "layer1.1.conv": 41.0}


GOLDEN_TREE = """\
Net                     216 ns  100.0%
├─ conv1 (Conv2d)        11 ns    5.1%
├─ layer1                93 ns   43.1%
│  ├─ 0 (Block)          52 ns   24.1%
│  │  └─ conv (Conv2d)   21 ns    9.7%
│  └─ 1                  41 ns   19.0%
│     └─ conv (Conv2d)   41 ns   19.0%
└─ fc (Linear)           61 ns   28.2%"""


def test_tree_text():
    # Root: per-run sums 210, 222, 216 -> median 216 ns.
    assert make_profile().tree() == GOLDEN_TREE


def test_tree_max_depth():
    assert make_profile().tree(max_depth=1).splitlines() == [
        "Net                216 ns  100.0%",
        "├─ conv1 (Conv2d)   11 ns    5.1%",
        "├─ layer1           93 ns   43.1%",
        "└─ fc (Linear)      61 ns   28.2%",
    ]


def test_group_by_input_shape_groups_module_calls_by_type_and_shapes():
    text = make_profile().table(group_by="input_shape", sort_by="order")
    rows = table_rows(text)
    assert [row[:3] for row in rows] == [
        ["Conv2d", CONV3, "1"], ["Conv2d", CONV4, "2"],
        ["operator.add", f"({CONV4[1:-1]}, {CONV4[1:-1]})", "1"],
        ["torch.flatten", CONV4, "1"], ["Linear", "([1, 4] float32)", "1"]]
    assert "Input shapes" in text


@pytest.mark.parametrize("kwargs, message", [
    ({"group_by": "op", "depth": 2}, "depth applies to group_by='module' only"),
    ({"depth": 2}, "depth applies to group_by='module' only"),
    ({"group_by": "module", "depth": 0}, "depth must be None or a positive int"),
])
def test_bad_depth_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_profile().table(**kwargs)


def test_bad_tree_depth_and_missing_shapes_are_refused():
    with pytest.raises(ValueError, match="max_depth must be None or a positive int"):
        make_profile().tree(max_depth=0)
    prof = make_profile()
    bare = Profile(prof.nodes.drop(columns=["input_shapes"]), prof.samples, prof.run_totals)
    with pytest.raises(ValueError, match="needs an input_shapes column"):
        bare.table(group_by="input_shape")
