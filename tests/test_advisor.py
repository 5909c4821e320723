"""Tests for pyfxprof.analyses.advisor: every rule on small synthetic Profiles (seeded numpy)."""

import numpy as np
import pandas as pd
import pytest

from pyfxprof.analyses.advisor import (RULES, SEVERITIES, Advice, Suggestion, advise, build_context,
                              register_rule, unregister_rule)
from pyfxprof.analyses.advisor_rules import fusible_pairs
from pyfxprof.data.profile import Profile
from pyfxprof.data.units import format_ns

US = 1_000  # ns


def node(name, median_ns, op="call_function", target=None, module_type="Net", inputs=(),
         **extra):
    """One node spec: a dict of nodes-table columns plus its median time."""
    target = name if target is None else target
    path = target if op == "call_module" else ""
    return dict(name=name, op=op, target=target, module_path=path, module_type=module_type,
                module_stack=(path,) if path else (), inputs=tuple(inputs),
                median=median_ns, **extra)


def module(name, median_ns, module_type, inputs=(), target=None, **extra):
    return node(name, median_ns, "call_module", target or name, module_type, inputs, **extra)


def make_profile(specs, runs=21, noise=0.0, noisy=(), seed=0, meta=None, device=None,
                 drop=()):
    """A Profile whose node i takes about specs[i]["median"] ns per run.

    ``noise`` is the relative std of every node, ``noisy`` names nodes with 30% noise;
    ``device`` gives device medians (ns) per node; ``drop`` removes nodes-table columns.
    """
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(specs)
    medians = frame.pop("median").to_numpy(dtype=np.float64)
    rel = np.where(frame["name"].isin(noisy), 0.3, noise)
    samples = np.rint(medians * (1 + rel * rng.standard_normal((runs, len(frame)))))
    samples = np.clip(samples, 0, None).astype(np.int64)
    device_samples = None
    if device is not None:
        device_samples = np.tile(np.asarray(device, dtype=np.int64), (runs, 1))
    frame.insert(0, "index", np.arange(len(frame)))
    meta = {"model": "toy", "device": "cuda:0" if device is not None else "cpu",
            "threads": 2, **(meta or {})}
    return Profile(frame.drop(columns=list(drop)), samples, samples.sum(axis=1), meta,
                   device_samples)


def conv_bn_specs():
    """conv1 -> bn1 -> relu -> conv2 -> bn2 -> add(bn2, conv2): only conv1/bn1 is fusible."""
    return [
        module("conv1", 400 * US, "Conv2d", ["x"]),
        module("bn1", 100 * US, "BatchNorm2d", ["conv1"]),
        node("relu", 50 * US, target="torch.relu", inputs=["bn1"]),
        module("conv2", 300 * US, "Conv2d", ["relu"]),
        module("bn2", 80 * US, "BatchNorm2d", ["conv2"]),
        node("add", 70 * US, target="operator.add", inputs=["bn2", "conv2"]),
    ]


def only(advice, rule):
    found = [s for s in advice if s.rule == rule]
    assert len(found) <= 1
    return found[0] if found else None


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
    assert item.evidence[0] == "best: conv (Conv2d) at 1 TFLOP/s"
    assert item.evidence[2].endswith("2 GFLOP/s (0.2% of best)")


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


# ---------------------------------------------------------------------------------------------
# registry, sorting, rendering


@pytest.fixture
def scratch_rules():
    """Names registered by a test, removed afterwards."""
    names = []
    yield names
    for name in names:
        if name in RULES:
            unregister_rule(name)


def test_custom_rule_is_registered_and_run(scratch_rules):
    @register_rule("test_relus")
    def relus(profile, context):
        rows = context.stats.index[context.stats["target"] == "torch.relu"]
        return [Suggestion("test_relus", "low", "ReLUs", context.cite_many(rows), "fuse them",
                           None, context.names(rows))]
    scratch_rules.append("test_relus")
    prof = make_profile(conv_bn_specs())
    assert "test_relus" in [s.rule for s in advise(prof)]
    item = only(advise(prof, "test_relus"), "test_relus")
    assert item.evidence == ["relu (torch.relu) median 50.0 µs, 5.0%"]
    with pytest.raises(ValueError, match="'test_relus' is already registered"):
        register_rule("test_relus")(relus)


def test_bad_rules_are_refused(scratch_rules):
    prof = make_profile(conv_bn_specs())
    with pytest.raises(ValueError, match=r"unknown advisor rules \['nope'\]"):
        advise(prof, ["nope"])
    register_rule("test_bad")(lambda profile, context: ["not a suggestion"])
    scratch_rules.append("test_bad")
    with pytest.raises(TypeError, match="'test_bad' returned a str"):
        advise(prof, ["test_bad"])
    with pytest.raises(ValueError, match="severity must be one of"):
        Suggestion("r", "urgent", "t", [], "a")


def test_sorted_by_severity_then_saving(scratch_rules):
    def make(severity, saving):
        return Suggestion("test_order", severity, f"{severity} {saving}", [], "a", saving)
    register_rule("test_order")(lambda profile, context: [
        make("low", 5.0), make("high", 1.0), make("info", None), make("high", 9.0),
        make("low", None)])
    scratch_rules.append("test_order")
    advice = advise(make_profile(conv_bn_specs()), ["test_order"])
    assert [s.title for s in advice] == ["high 9.0", "high 1.0", "low 5.0", "low None",
                                         "info None"]


def test_default_advice_is_sorted_and_rendered():
    prof = make_profile(conv_bn_specs(), noise=0.01)
    advice = advise(prof)
    assert isinstance(advice, Advice) and {"fusible_conv_bn", "hotspots"} <= {
        s.rule for s in advice}
    ranks = [SEVERITIES.index(s.severity) for s in advice]
    assert ranks == sorted(ranks)
    text = str(advice)
    assert text.startswith(f"Advice for toy on cpu: {len(advice)} suggestions (median run ")
    assert "1. [high] Fold 1 eval-mode BatchNorm into" in text
    assert "   evidence:\n     - 1 Conv→BatchNorm pair: " in text
    assert "   action: pyfxprof.fuse_conv_bn(model)" in text
    assert "expected saving: not estimated" in text  # hotspots
    saving = advice[0].expected_saving_ns
    pct = f"{saving / build_context(prof).total_ns * 100:.1f}%"
    assert f"expected saving: {format_ns(saving)} ({pct})" in text


def test_empty_profile_gives_empty_advice():
    prof = make_profile(conv_bn_specs(), runs=0)
    advice = advise(prof)
    assert list(advice) == [] and "0 suggestions" in str(advice)
