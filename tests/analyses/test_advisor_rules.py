"""Tests of pyfxprof.analyses.advisor_rules: every built-in rule on small synthetic Profiles
(machine_noise and warmup_too_small: tests/data/test_warmup.py)."""

import numpy as np
import pytest

from pyfxprof.analyses.advisor import advise
from pyfxprof.analyses.advisor_rules import fusible_pairs
from tests.advisor_profiles import US, conv_bn_specs, make_profile, module, node, only

# ---------------------------------------------------------------------------------------------
# fusible Conv -> BN


def test_conv_bn_pair_flagged_with_bn_median_as_saving():
    prof = make_profile(conv_bn_specs())
    item = only(advise(prof, ["fusible_conv_bn"]), "fusible_conv_bn")
    assert item.nodes == ["conv1", "bn1"]
    assert item.expected_saving_ns == 100 * US
    assert item.severity == "high"  # 100 µs of 1 ms = 10%
    assert "conv1 → bn1: BatchNorm 100 µs (10.0%), Conv2d 400 µs" in item.evidence
    assert item.evidence[0] == ("1 Conv→BatchNorm pair: 500 µs (50.0%) in total, of which the "
                                "BatchNorms 100 µs (10.0%)")
    assert "pyfxprof fuse MODEL --bench" in item.action


def test_conv_whose_output_also_feeds_an_add_is_not_flagged():
    stats = make_profile(conv_bn_specs()).to_dataframe()
    assert [tuple(stats["name"][list(pair)]) for pair in fusible_pairs(stats)] == [
        ("conv1", "bn1")]


def test_linear_bn1d_pairs_and_unsafe_patterns():
    specs = [
        module("fc", 50 * US, "Linear", ["x"]),
        module("bn_fc", 10 * US, "BatchNorm1d", ["fc"]),
        module("conv_a", 50 * US, "Conv2d", ["bn_fc"]),
        module("bn_wrong", 10 * US, "BatchNorm1d", ["conv_a"]),           # type mismatch
        module("shared_1", 50 * US, "Conv2d", ["bn_wrong"], target="shared"),
        module("bn_s", 10 * US, "BatchNorm2d", ["shared_1"]),             # conv reused below
        module("shared_2", 50 * US, "Conv2d", ["bn_s"], target="shared"),
        module("conv_b", 50 * US, "Conv2d", ["shared_2"]),
        module("bn_extra", 10 * US, "BatchNorm2d", ["conv_b", "shared_2"]),  # extra argument
    ]
    item = only(advise(make_profile(specs), ["fusible_conv_bn"]), "fusible_conv_bn")
    assert item.nodes == ["fc", "bn_fc"]
    assert item.title.startswith("Fold 1 eval-mode BatchNorm ")


def test_no_inputs_column_means_no_fusion_advice():
    prof = make_profile(conv_bn_specs(), drop=["inputs"])
    assert list(advise(prof, ["fusible_conv_bn"])) == []


# ---------------------------------------------------------------------------------------------
# overhead-bound


def test_many_tiny_nodes_are_overhead_bound_with_estimated_saving():
    specs = [node(f"op{i}", 2 * US) for i in range(30)] + [node("big", 20 * US)]
    item = only(advise(make_profile(specs), ["overhead_bound"]), "overhead_bound")
    assert item.severity == "high"  # 60 µs of 80 µs
    assert item.expected_saving_ns == pytest.approx(0.5 * 60 * US)
    assert len(item.nodes) == 30 and "big" not in item.nodes
    assert item.evidence[0].startswith("30 of 31 nodes (97%) have a median under 10.0 µs")
    assert any("estimate" in line for line in item.evidence)
    assert "torch.compile" in item.action


def test_few_large_nodes_are_not_overhead_bound():
    specs = [node(f"op{i}", 2 * US) for i in range(5)] + [node("big", 900 * US)]
    assert list(advise(make_profile(specs), ["overhead_bound"])) == []


def test_gpu_host_above_device_is_launch_bound():
    specs = [node("a", 30 * US), node("b", 30 * US), node("c", 10 * US)]
    prof = make_profile(specs, device=[5 * US, 10 * US, 40 * US])
    item = only(advise(prof, ["overhead_bound"]), "overhead_bound")
    assert item.title.startswith("Launch-bound")
    assert item.nodes == ["a", "b"]  # largest host - device gap first; c is device-bound
    assert item.expected_saving_ns == pytest.approx(0.5 * (70 - 55) * US)
    assert "CUDA graphs" in item.action
    assert "a (a): host 30.0 µs, device 5.00 µs" in item.evidence


def test_gpu_device_above_host_is_not_launch_bound():
    prof = make_profile([node("a", 10 * US), node("b", 10 * US)], device=[50 * US, 50 * US])
    assert list(advise(prof, ["overhead_bound"])) == []


# ---------------------------------------------------------------------------------------------
# hotspots


def test_hotspots_hand_computed():
    medians = [5, 50, 10, 20, 10, 5]
    specs = [node(name, m * US) for name, m in zip("abcdef", medians)]
    item = only(advise(make_profile(specs), ["hotspots"]), "hotspots")
    assert item.nodes == ["b", "d", "c"]  # 50 + 20 + 10 = 80 of 100; ties keep order (c < e)
    assert item.severity == "info" and item.expected_saving_ns is None
    assert item.evidence[0] == "3 of 6 nodes make up 80.0% of node time (sum of node medians " \
                               "100 µs)"


def test_hotspots_are_the_smallest_set_covering_80_percent():
    rng = np.random.default_rng(7)
    specs = [node(f"n{i}", int(m)) for i, m in enumerate(rng.lognormal(10, 1.5, 60))]
    prof = make_profile(specs, noise=0.02)
    item = only(advise(prof, ["hotspots"]), "hotspots")
    median = prof.stats().set_index("name")["median"]
    covered = median[item.nodes].sum() / median.sum()
    assert covered >= 0.8
    assert median[item.nodes[:-1]].sum() / median.sum() < 0.8
    assert median[item.nodes].min() >= median.drop(item.nodes).max()


def test_hotspots_on_gpu_rank_device_time():
    specs = [node("launchy", 90 * US), node("kernel", 10 * US)]
    prof = make_profile(specs, device=[1 * US, 80 * US])
    item = only(advise(prof, ["hotspots"]), "hotspots")
    assert item.nodes == ["kernel"]
    assert "of device time (sum of node device medians 81.0 µs)" in item.evidence[0]
    assert item.evidence[2] == "kernel (kernel) device median 80.0 µs, 80.0%"


# ---------------------------------------------------------------------------------------------
# low achieved FLOP/s


def flops_specs():
    return [
        module("conv", 1000 * US, "Conv2d", flops=1e9),     # 1 TFLOP/s, the best
        module("bn", 500 * US, "BatchNorm2d", flops=1e6),   # 2 GFLOP/s, 0.2% of best, 33%
        node("relu", 5 * US, target="torch.relu", flops=1e3),   # slow but < 1% of the run
        node("view", 1 * US, target="view", flops=np.nan),  # unknown flops: ignored
    ]


def test_low_flops_flags_slow_nodes_worth_one_percent():
    item = only(advise(make_profile(flops_specs()), ["low_flops"]), "low_flops")
    assert item.nodes == ["bn"]
    assert item.severity == "medium"
    assert item.evidence[0] == "best: conv (Conv2d) at 1.00 TFLOP/s"
    assert item.evidence[2].endswith("2.00 GFLOP/s (0.2% of best)")
    assert "prof.replay('bn', variants=['channels_last', 'bf16', 'compile'])" in item.action


def test_no_flops_column_means_no_flops_advice():
    prof = make_profile(flops_specs(), drop=["flops"])
    assert list(advise(prof, ["low_flops"])) == []


# ---------------------------------------------------------------------------------------------
# noisy measurements


def test_noisy_node_flagged_and_quiet_or_small_ones_not():
    specs = [node("steady", 500 * US), node("jumpy", 400 * US), node("tiny_jumpy", 1 * US)]
    prof = make_profile(specs, runs=41, noise=0.01, noisy=("jumpy", "tiny_jumpy"))
    item = only(advise(prof, ["noisy"]), "noisy")
    assert item.nodes == ["jumpy"]
    assert item.evidence[0] == "measured over 41 runs with 2 threads"
    assert "--runs 82" in item.action and "taskset" in item.action


# ---------------------------------------------------------------------------------------------
# known slow ops


def test_host_sync_ops_flagged_on_cuda_only():
    specs = [node("mm", 100 * US, target="torch.matmul"), node("item", 20 * US, "call_method",
                                                              "item"),
             node("nz", 5 * US, target="torch.nonzero")]
    gpu = make_profile(specs, device=[90 * US, 1 * US, 1 * US])
    item = only(advise(gpu, ["known_slow_ops"]), "known_slow_ops")
    assert item.nodes == ["item", "nz"]
    assert "synchronise" in item.title
    cpu = make_profile(specs)
    assert list(advise(cpu, ["known_slow_ops"])) == []


def test_16bit_outputs_flagged_on_cpu():
    specs = [module("half", 100 * US, "Conv2d", output_shapes="[2, 8] float16"),
             module("full", 200 * US, "Conv2d", output_shapes="[2, 8] float32"),
             node("split", 50 * US, target="torch.split",
                  output_shapes="([1, 8] bfloat16, [1, 8] bfloat16)")]
    item = only(advise(make_profile(specs), ["known_slow_ops"]), "known_slow_ops")
    assert item.nodes == ["half", "split"]
    assert "float16/bfloat16" in item.evidence[0]
    assert item.severity == "medium"


@pytest.mark.parametrize("meta, says_eval", [
    ({"training": False, "given_training": True}, True),   # profile() of a train-mode model
    ({"training": True, "given_training": True}, True),    # a Profiler loop in train mode
    ({"training": False, "given_training": False}, False),
    ({}, False),                                           # a profile saved before the keys
])
def test_fusion_fix_says_to_call_eval_first_when_the_model_is_in_train_mode(meta, says_eval):
    item = only(advise(make_profile(conv_bn_specs(), meta=meta), ["fusible_conv_bn"]),
                "fusible_conv_bn")
    assert item.action.startswith("call model.eval() first") == says_eval
    assert "pyfxprof.fuse_conv_bn(model)" in item.action


# ---------------------------------------------------------------------------------------------
# links to a replay


@pytest.mark.parametrize("rule, specs, device, expected", [
    ("overhead_bound", [node(f"op{i}", (2 + i % 3) * US) for i in range(30)], None,
     "prof.replay('op2', variants=['compile'])"),
    ("overhead_bound", [node("a", 30 * US), node("b", 40 * US)], [5 * US, 10 * US],
     "prof.replay('b', variants=['cuda_graph', 'compile'])"),
    ("hotspots", [node("a", 5 * US), module("big", 50 * US, "Conv2d")], None,
     "costs alone, warm or cold: prof.replay('big', cache='both')"),
    ("low_flops", flops_specs(), None,
     "prof.replay('bn', variants=['channels_last', 'bf16', 'compile'])"),
])
def test_suggestions_link_to_a_replay_of_their_first_node(rule, specs, device, expected):
    item = only(advise(make_profile(specs, device=device), [rule]), rule)
    assert expected in item.action and "(docs/replay.md)" in item.action


@pytest.mark.parametrize("op", ["fused_kernel", "outside_graph", "range"])
def test_a_row_a_replay_cannot_rebuild_gets_no_replay_link(op):
    specs = [node("a", 5 * US), node("big", 50 * US, op=op)]
    item = only(advise(make_profile(specs), ["hotspots"]), "hotspots")
    assert item.nodes[0] == "big" and "prof.replay" not in item.action
