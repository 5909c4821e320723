"""Memory per node (profile_memory=True): torch's allocator events in the untimed analysis run,
checked against torch.profiler's own figures for the same model in the same test."""

import json

import numpy as np
import pandas as pd
import pytest
import torch
import torchvision

import pyfxprof
from pyfxprof.data.validate import model_nodes
from pyfxprof.data import rollup
from pyfxprof.errors import PyfxprofError


@pytest.fixture(scope="module")
def resnet_memory():
    model, x = torchvision.models.resnet18().eval(), torch.randn(1, 3, 64, 64)
    prof = pyfxprof.profile(model, (x,), runs=2, warmup=0, profile_memory=True, progress=False)
    with torch.inference_mode(), torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as torch_prof:
        model(x)
    return prof, torch_prof


#: Each op kind of ResNet-18's graph and the aten op torch.profiler shows for the same calls.
ATEN_OF = {"Conv2d": "aten::conv2d", "BatchNorm2d": "aten::batch_norm", "ReLU": "aten::relu_",
           "MaxPool2d": "aten::max_pool2d", "aten::add_": "aten::add_",
           "AdaptiveAvgPool2d": "aten::adaptive_avg_pool2d", "torch.flatten": "aten::flatten",
           "Linear": "aten::linear"}


def test_allocations_per_node_add_up_to_torch_profilers_within_5_percent(resnet_memory):
    prof, torch_prof = resnet_memory
    events = torch_prof.profiler.kineto_results.events()
    torch_alloc = sum(e.nbytes() for e in events if e.name() == "[memory]" and e.nbytes() > 0)
    ours = int(prof.nodes["cpu_alloc_bytes"].sum())
    assert torch_alloc > 0 and abs(ours - torch_alloc) / torch_alloc < 0.05, (ours, torch_alloc)
    conv1 = prof.nodes.set_index("name").loc["conv1"]
    assert conv1["cpu_alloc_bytes"] >= conv1["out_bytes"]  # its output, at least
    assert (prof.nodes["cpu_peak_bytes"] <= prof.nodes["cpu_alloc_bytes"]).all()
    assert "cuda_alloc_bytes" not in prof.nodes  # a CPU model: no CUDA columns


def test_memory_per_op_kind_matches_torch_profilers_within_5_percent(resnet_memory):
    prof, torch_prof = resnet_memory
    theirs = {row.key: row for row in torch_prof.key_averages()}
    ours = {row.key: row for row in prof.key_averages() if row.key in ATEN_OF or
            not row.key.startswith("Python outside the graph")}
    assert set(ours) == set(ATEN_OF)  # the residual adds run in place, as aten::add_
    for kind, row in ours.items():
        aten = theirs[ATEN_OF[kind]]
        assert row.count == aten.count * prof.n_runs, kind  # calls over every timed run
        assert abs(row.cpu_memory_usage - aten.cpu_memory_usage) <= \
            0.05 * abs(aten.cpu_memory_usage), (kind, row.cpu_memory_usage, aten.cpu_memory_usage)
    assert ours["Conv2d"].cpu_memory_usage > 0 and ours["aten::add_"].cpu_memory_usage == 0


def test_key_averages_memory_columns_sort_like_torch(resnet_memory):
    prof, _ = resnet_memory
    averages = prof.key_averages()
    lines = averages.table(sort_by="self_cpu_memory_usage", row_limit=3).splitlines()
    assert "CPU Mem" in lines[1] and "Self CPU Mem" in lines[1] and "CUDA Mem" not in lines[1]
    usage = sorted((row.self_cpu_memory_usage for row in averages), reverse=True)
    first = max(averages, key=lambda row: row.self_cpu_memory_usage)
    assert lines[3].split()[0] == first.key and first.self_cpu_memory_usage == usage[0]
    net = prof.nodes["cpu_alloc_bytes"] - prof.nodes["cpu_freed_bytes"]
    assert sum(row.self_cpu_memory_usage for row in averages) == int(net.sum())


def test_memory_timeline_exports(resnet_memory, tmp_path):
    prof, _ = resnet_memory
    prof.export_memory_timeline(tmp_path / "memory.json")
    rows = json.loads((tmp_path / "memory.json").read_text())["nodes"]
    assert [r["name"] for r in rows] == prof.nodes["name"].tolist()
    starts = np.array([r["live_start_bytes"] for r in rows])
    ends = np.array([r["live_end_bytes"] for r in rows])
    assert (np.array([r["peak_bytes"] for r in rows]) >= starts).all()
    assert (starts[1:] <= ends[:-1]).all()  # between nodes, only dead values are freed
    prof.export_memory_timeline(tmp_path / "memory.html")
    assert "data:image/png;base64," in (tmp_path / "memory.html").read_text()
    prof.export_memory_timeline(tmp_path / "memory.png")
    assert (tmp_path / "memory.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(PyfxprofError, match="no cuda memory figures"):
        prof.export_memory_timeline(tmp_path / "cuda.json", device="cuda")


@pytest.mark.parametrize("target, reason", [
    ("", "it is a directory"), ("missing/memory.json", "No such file or directory"),
    ("missing/memory.html", "No such file or directory"),
    ("missing/memory.png", "No such file or directory")])
def test_memory_timeline_to_a_bad_target_is_one_line(resnet_memory, tmp_path, target, reason):
    prof, _ = resnet_memory
    with pytest.raises(PyfxprofError, match=reason) as error:
        prof.export_memory_timeline(tmp_path / target)
    assert "\n" not in str(error.value) and list(tmp_path.iterdir()) == []


def test_without_profile_memory_there_are_no_allocator_columns():
    prof = pyfxprof.profile(torch.nn.Linear(4, 4), (torch.randn(2, 4),), runs=1, warmup=0,
                            progress=False)
    assert "cpu_alloc_bytes" not in prof.nodes
    with pytest.raises(PyfxprofError, match="profile_memory=True"):
        prof.table(sort_by="self_cpu_memory_usage")


def test_memory_columns_survive_save_and_load(resnet_memory, tmp_path):
    prof, _ = resnet_memory
    prof.save(tmp_path / "rn18.json")
    assert pyfxprof.load(tmp_path / "rn18.json") == prof


def test_module_rows_carry_memory_including_their_children(resnet_memory):
    prof, _ = resnet_memory
    nodes = prof.nodes
    keys = rollup.module_keys(nodes, 1)
    memory = rollup.group_memory(nodes, keys, ["layer1", "layer2"])
    inside = nodes[[key == "layer1" for key in keys]]
    assert memory["cpu_alloc_bytes"][0] == inside["cpu_alloc_bytes"].sum()
    assert memory["cpu_peak_bytes"][0] >= inside["cpu_peak_bytes"].max() > 0
    text = prof.table(group_by="module", sort_by="cpu_memory_usage", width=None,
                      columns=["group", "cpu_alloc_bytes", "cpu_peak_bytes"]).splitlines()
    header = next(k for k, line in enumerate(text) if line.startswith("Module"))
    assert "CPU alloc" in text[header] and "CPU peak" in text[header]
    allocated = [row.split()[0] for row in text[header + 2:header + 4]]
    top = nodes.groupby(pd.Series(keys), sort=False)["cpu_alloc_bytes"].sum().nlargest(2)
    assert allocated == list(top.index)


def test_hooks_and_whole_captures_measure_the_same_allocations(resnet_memory):
    prof, _ = resnet_memory
    model, x = torchvision.models.resnet18().eval(), torch.randn(1, 3, 64, 64)
    fx_nodes = prof.nodes.set_index("name")
    hooks = pyfxprof.profile(model, (x,), runs=1, warmup=0, profile_memory=True, progress=False,
                             capture="hooks")
    alloc = hooks.nodes[model_nodes(hooks.nodes)].set_index("name")["cpu_alloc_bytes"]
    assert (alloc == fx_nodes.loc[alloc.index, "cpu_alloc_bytes"]).all()  # same module calls
    assert alloc.sum() == fx_nodes["cpu_alloc_bytes"].sum()  # the in-place adds allocate 0
    whole = pyfxprof.profile(model, (x,), runs=1, warmup=0, profile_memory=True,
                             progress=False, capture="whole")
    whole_nodes = whole.nodes[model_nodes(whole.nodes)]
    assert whole_nodes["cpu_alloc_bytes"].tolist() == [alloc.sum()]
    assert whole_nodes["cpu_peak_bytes"].iloc[0] >= alloc.max()
