"""Tests of analyses.roofline_rules on hand-built profiles: each rule fires on the case it is
for, with its evidence, and stays silent without the machine's peaks."""

import numpy as np
import pandas as pd

from pyfxprof.analyses.advisor import advise
from pyfxprof.analyses.roofline_rules import memory_runs
from tests.data.test_roofline import PEAKS, node, toy_profile

RULES = ["roofline_fuse", "roofline_overhead", "roofline_low_efficiency",
         "roofline_first_touch"]


def test_memory_bound_elementwise_runs_are_to_fuse():
    rows = [node("mm", "torch.mm", flops=2e8, read=2e6, written=1e6),
            node("bias", "torch.add", vector=1e6, read=8e6, written=4e6),
            node("act", "torch.relu", vector=1e6, read=4e6, written=4e6),
            node("scale", "torch.mul", vector=1e6, read=4e6, written=4e6)]
    profile = toy_profile(rows, np.array([[2_100_000, 2_000_000, 1_000_000, 1_000_000]] * 5))
    advice = advise(profile, rules=RULES)
    fuse = [item for item in advice if item.rule == "roofline_fuse"]
    assert len(fuse) == 1 and fuse[0].nodes == ["bias", "act", "scale"]
    assert fuse[0].expected_saving_ns == 4_000_000 * (1 - 1 / 3)
    assert any("memory-bound, efficiency" in line for line in fuse[0].evidence)
    assert "torch.compile" in fuse[0].action
    assert "prof.replay('bias', variants=['compile'])" in fuse[0].action


def test_overhead_bound_nodes_are_to_batch_or_compile():
    rows = [node(f"add_{i}", "torch.add", vector=8, read=64, written=32) for i in range(5)]
    profile = toy_profile(rows, np.full((5, 5), 3000))
    advice = advise(profile, rules=RULES)
    assert [item.rule for item in advice] == ["roofline_overhead"]
    item = advice[0]
    assert item.nodes == [f"add_{i}" for i in range(5)]
    assert any("fixed cost 1.00 µs" in line for line in item.evidence)
    assert "batch" in item.action and "CUDA graphs" not in item.action  # a CPU profile
    assert "prof.replay('add_0', variants=['compile'])" in item.action


def test_compute_bound_nodes_at_low_efficiency_get_layout_dtype_and_kernel_hints():
    rows = [node("conv", "conv", flops=2e8, read=2e6, written=1e6, op="call_module"),
            node("fast", "torch.mm", flops=2e8, read=2e6, written=1e6)]
    nodes = toy_profile(rows, np.ones((3, 2), dtype=np.int64)).nodes
    nodes["module_type"] = ["Conv2d", "Net"]
    samples = np.array([[20_000_000, 2_200_000]] * 9)
    profile = toy_profile(rows, samples)
    profile.nodes["module_type"] = nodes["module_type"]
    advice = advise(profile, rules=["roofline_low_efficiency"])
    assert [item.nodes for item in advice] == [["conv"]]  # fast runs at 0.91 of the peak
    assert "channels_last" in advice[0].action and "bfloat16" in advice[0].action
    assert ("prof.replay('conv', variants=['channels_last', 'bf16', 'compile'])"
            in advice[0].action)
    assert advice[0].expected_saving_ns == 18_000_000


def test_no_low_efficiency_advice_where_the_runs_waited_for_cores():
    rows = [node("slow", "torch.mm", flops=2e8, read=2e6, written=1e6)]
    profile = toy_profile(rows, np.full((9, 1), 20_000_000))
    assert [item.nodes for item in advise(profile, rules=["roofline_low_efficiency"])] == [
        ["slow"]]
    profile.meta["core_wait_ns_per_run"] = 25_000_000.0  # 1.25 of a run: the scheduler's
    assert list(advise(profile, rules=["roofline_low_efficiency"])) == []


def test_rules_are_silent_without_peaks():
    rows = [node(f"add_{i}", "torch.add", vector=8, read=64, written=32) for i in range(5)]
    assert list(advise(toy_profile(rows, np.full((5, 5), 3000), peaks=None),
                       rules=RULES)) == []


def test_memory_runs_need_two_consecutive_fusible_memory_bound_nodes():
    frame = pd.DataFrame({"bound": ["memory", "memory", "memory", "compute", "memory",
                                    "overhead", "memory", "memory"],
                          "kind": ["norm", "elementwise", "conv", "matmul", "copy",
                                   "elementwise", "softmax", "reduction"]})
    assert memory_runs(frame) == [[0, 1], [6, 7]]
    assert PEAKS["bandwidth"] > 0


def test_fresh_outputs_first_touched_on_every_call_are_to_keep_in_a_buffer():
    touch = {**PEAKS, "first_touch_bytes": 32 << 20, "first_touch_ns_per_byte": 0.5}
    rows = [dict(node(name, "torch.add", vector=8e6, read=64e6, written=32e6),
                 fresh_out_bytes=size, fresh_out_largest=size)
            for name, size in (("fresh", 32 << 20), ("small", 1 << 20))]
    profile = toy_profile(rows, np.array([[30_000_000, 10_000_000]] * 5), peaks=touch)
    advice = [item for item in advise(profile, rules=RULES)
              if item.rule == "roofline_first_touch"]
    assert len(advice) == 1 and advice[0].nodes == ["fresh"]
    assert advice[0].expected_saving_ns == (32 << 20) * 0.5
    assert any("first touch 16.8 ms" in line for line in advice[0].evidence)
    assert "out=" in advice[0].action
    assert not [item for item in advise(toy_profile(rows, np.full((5, 2), 10**7)),
                                        rules=RULES) if item.rule == "roofline_first_touch"]


def test_the_pages_the_runs_faulted_are_cited_and_charged():
    touch = {**PEAKS, "first_touch_bytes": 32 << 20, "first_touch_ns_per_byte": 0.5}
    rows = [dict(node(name, "torch.add", vector=8e6, read=12e6, written=4e6),
                 fresh_out_bytes=size, fresh_out_largest=size)
            for name, size in (("faulted", 4 << 20), ("kept", 0))]
    profile = toy_profile(rows, np.array([[10_000_000, 10_000_000]] * 5), peaks=touch)
    profile.meta.update(faults_per_run=512, page_bytes=4096)  # half the 4 MiB output
    advice = [item for item in advise(profile, rules=RULES)
              if item.rule == "roofline_first_touch"]
    assert len(advice) == 1 and advice[0].nodes == ["faulted"]
    assert advice[0].expected_saving_ns == (2 << 20) * 0.5
    assert "512 page faults per run" in advice[0].evidence[0]
