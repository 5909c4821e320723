"""Tests of key_averages(): torch.profiler's rows and table on a Profile, hand-computed, and
row names of Python operators checked against torch.profiler's for the same model."""

import numpy as np
import pandas as pd
import pytest
import torch

import pyfxprof

from pyfxprof.data.profile import Profile
from pyfxprof.errors import PyfxprofError


def nested_profile(memory=False, device=False):
    """Module-hooks shaped profile: root > (layer1 > relu), relu, fc; 2 runs."""
    nodes = pd.DataFrame({
        "index": range(5), "name": ["Net", "layer1", "relu", "relu_1", "fc"],
        "op": ["call_module"] * 5, "target": ["Net", "layer1", "relu", "relu", "fc"],
        "module_path": ["", "layer1", "layer1.relu", "relu", "fc"],
        "module_type": ["Net", "Block", "ReLU", "ReLU", "Linear"],
        "module_stack": [(), ("layer1",), ("layer1", "layer1.relu"), ("relu",), ("fc",)],
        "input_shapes": ["([2, 4] float32)", "([2, 4] float32)", "([2, 4] float32)",
                         "([2, 8] float32)", "([2, 4] float32)"]})
    if memory:
        nodes["cpu_alloc_bytes"] = [1000, 600, 200, 100, 300]
        nodes["cpu_freed_bytes"] = [400, 100, 0, 0, 100]
        nodes["cpu_peak_bytes"] = [900, 600, 200, 100, 300]
    samples = np.array([[10_000, 6_000, 2_000, 1_000, 2_000],
                        [12_000, 7_000, 3_000, 1_000, 3_000]])
    dev = samples // 2 if device else None
    return Profile(nodes, samples, samples[:, 0], {"model": "net"}, device_samples=dev)


def test_rows_aggregate_by_op_kind_with_self_excluding_nested_calls():
    rows = {row.key: row for row in nested_profile().key_averages()}
    assert list(rows) == ["Net", "Block", "ReLU", "Linear"]
    relu, net, block = rows["ReLU"], rows["Net"], rows["Block"]
    assert relu.count == 4  # two ReLU calls per run, two runs
    assert relu.cpu_time_total == pytest.approx((2 + 3 + 1 + 1) * 1.0)  # µs, as torch's
    assert relu.cpu_time == pytest.approx(7.0 / 4)
    assert block.self_cpu_time_total == pytest.approx(13.0 - 5.0)  # minus its relu
    # the root minus its direct children (layer1, relu_1, fc): 22 - 13 - 2 - 5
    assert net.self_cpu_time_total == pytest.approx(2.0)
    assert sum(r.self_cpu_time_total for r in rows.values()) == pytest.approx(22.0)


def test_table_has_torchs_titles_sort_keys_and_row_limit():
    averages = nested_profile().key_averages()
    text = averages.table(sort_by="self_cpu_time_total", row_limit=2)
    titles = text.splitlines()[1]
    for title in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                  "# of Calls"):
        assert title in titles
    assert "CPU Mem" not in titles and "CUDA" not in titles
    body = text.splitlines()[3:5]
    assert [line.split()[0] for line in body] == ["Block", "ReLU"]  # 8 µs, 7 µs self
    assert "Self CPU time total: 22.000us" in text
    by_count = averages.table(sort_by="count", row_limit=-1).splitlines()[3]
    assert by_count.split()[0] == "ReLU" and by_count.split()[-1] == "4"
    with pytest.raises(PyfxprofError, match="not a torch.profiler sort key"):
        averages.table(sort_by="total_time")


def test_memory_and_device_columns_appear_when_measured():
    averages = nested_profile(memory=True, device=True).key_averages()
    titles = averages.table().splitlines()[1]
    for title in ("Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg", "CPU Mem",
                  "Self CPU Mem"):
        assert title in titles
    rows = {row.key: row for row in averages}
    assert rows["Net"].cpu_memory_usage == 600  # allocated minus freed, including children
    assert rows["Net"].self_cpu_memory_usage == 600 - 500 - 100 - 200
    assert rows["ReLU"].self_cpu_memory_usage == 300
    first = averages.table(sort_by="self_cpu_memory_usage").splitlines()[3]
    assert first.split()[0] == "Block" and "300 B" in first
    assert rows["Linear"].self_cuda_time_total == pytest.approx(2.5)
    assert "Self CUDA time total" in averages.table(sort_by="self_cuda_time_total")


def test_group_by_input_shape_splits_rows_and_shows_the_column():
    averages = nested_profile().key_averages(group_by_input_shape=True)
    relus = [row for row in averages if row.key == "ReLU"]
    assert sorted(row.input_shapes for row in relus) == ["([2, 4] float32)", "([2, 8] float32)"]
    assert "Input Shapes" in averages.table().splitlines()[1]


def test_group_by_stack_n_keys_rows_by_source_frames():
    prof = nested_profile()
    prof.nodes["source_stack"] = [(), ("net.py:5 in forward",),
                                  ("net.py:5 in forward", "block.py:9 in forward"),
                                  ("net.py:6 in forward",), ("net.py:7 in forward",)]
    averages = prof.key_averages(group_by_stack_n=2)
    relus = {tuple(row.stack) for row in averages if row.key == "ReLU"}
    assert relus == {("block.py:9 in forward", "net.py:5 in forward"), ("net.py:6 in forward",)}
    lines = averages.table(sort_by="cpu_time_total").splitlines()
    assert "Source Location" in lines[1]
    assert any(line.strip() == "net.py:5 in forward" for line in lines)  # a second frame line


def test_profile_table_accepts_torchs_row_limit_and_sort_keys():
    prof = nested_profile(memory=True)
    text = prof.table(sort_by="self_cpu_time_total", row_limit=2, width=None)
    assert "3 more nodes not shown" in text
    by_memory = prof.table(sort_by="cpu_memory_usage", row_limit=-1, width=None,
                           columns=["name", "cpu_alloc_bytes"]).splitlines()
    body = by_memory[by_memory.index(next(line for line in by_memory if line.startswith("---"))) + 1:]
    assert [line.split()[0] for line in body[:5]] == ["Net", "layer1", "fc", "relu", "relu_1"]
    with pytest.raises(PyfxprofError, match="device times"):
        prof.table(sort_by="self_cuda_time_total")
    with pytest.raises(PyfxprofError, match="not both"):
        prof.table(top=2, row_limit=2)


def test_events_are_one_row_per_node_call_with_its_run_and_loop_step():
    prof = nested_profile(memory=True)
    events = prof.events()
    assert len(events) == prof.n_nodes * prof.n_runs
    first = events[0]
    assert (first.key, first.node, first.run, first.step, first.count) == ("Net", "Net", 0, 0, 1)
    assert first.cpu_time_total == pytest.approx(10.0) and first.self_cpu_time_total == \
        pytest.approx(10.0 - 6.0 - 1.0 - 2.0)
    assert events[5].run == 1 and events[5].cpu_time_total == pytest.approx(12.0)
    totals = {row.key: row.self_cpu_time_total for row in prof.key_averages()}
    assert sum(e.self_cpu_time_total for e in events if e.key == "ReLU") == pytest.approx(
        totals["ReLU"])
    assert first.cpu_memory_usage == 600 and "CPU Mem" in events.table().splitlines()[1]
    looped = Profile(prof.nodes, prof.samples, prof.run_totals,
                     {"loop": {"steps": [6, 7], "step_starts_ns": [100, 200]}},
                     run_starts=np.array([150, 250]))
    assert looped.run_steps().tolist() == [6, 7]
    assert {e.step for e in looped.events() if e.run == 1} == {7}


class _Operators(torch.nn.Module):
    """Python's operators on tensors, out of place and in place, and on ints."""

    def forward(self, x, i):
        n = x.shape[0] + 1
        y = x * 2 - x / 3 + x // 2 + x % 2 + x ** 2 + x @ x + (-x)
        y += x
        y -= x
        y *= x
        y /= 2
        y //= 1
        y %= 5
        y **= 1
        y @= x
        j = (i & i) | (i ^ i) | (i << 1) | (i >> 1)
        j &= i
        j |= i
        j ^= i
        j <<= 1
        j >>= 1
        return y[:n - 1], j


def test_python_operators_on_tensors_are_named_by_torchs_aten_ops():
    from pyfxprof.data.key_averages import op_kinds
    model, inputs = _Operators(), (torch.rand(3, 3) + 1, torch.arange(3))
    prof = pyfxprof.profile(model, inputs, runs=1, warmup=0, progress=False)
    with torch.profiler.profile() as theirs:
        model(*inputs)
    torch_keys = {row.key for row in theirs.key_averages()}
    nodes = prof.nodes.assign(kind=op_kinds(prof.nodes))
    operators = nodes[nodes["target"].str.startswith("_operator.")
                      & (nodes["target"] != "_operator.getitem")]
    on_tensors = operators[operators["input_shapes"].str.startswith("([")]
    assert len(on_tensors) == 33 and set(on_tensors["kind"]) <= torch_keys
    assert {"aten::add_", "aten::sub_", "aten::mul_", "aten::div_", "aten::__ixor__",
            "aten::add", "aten::neg"} <= set(on_tensors["kind"])
    on_ints = operators[~operators.index.isin(on_tensors.index)]
    assert len(on_ints) >= 2 and (on_ints["kind"] == on_ints["target"]).all()  # n + 1, n - 1
    rows = {row.key: row for row in prof.key_averages()}
    assert rows["aten::add_"].count == 1 and rows["aten::add"].count == 5


def test_the_outside_row_is_an_event_of_its_own():
    from tests.outside_profiles import outside_profile
    rows = {row.key: row for row in outside_profile().key_averages()}
    outside = [row for key, row in rows.items() if "outside the graph" in key]
    assert len(outside) == 1 and outside[0].count == 10
    assert outside[0].cpu_time_total == pytest.approx(30000 / 1000)  # µs over 10 runs
