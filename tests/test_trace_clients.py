"""pyfxprof's Chrome traces in the clients users open them with: Holistic Trace Analysis and
torch-tb-profiler (TensorBoard), fed by torch.profiler.tensorboard_trace_handler."""

import os

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.data.profile import Profile
from tests.toy_profiles import toy_nodes

SAMPLES = np.array([[4000, 9000, 1000, 2000], [4100, 9100, 1100, 2100],
                    [4200, 9200, 1200, 2200], [3900, 8900, 900, 1900]], dtype=np.int64)
OPS = {"conv1": "Conv2d", "layer1_0_conv1": "Conv2d", "layer1_0_relu": "ReLU",
       "add": "operator.add"}


def toy_profile(scale=1, device=False, samples=SAMPLES):
    samples = samples * scale
    return Profile(toy_nodes(), samples, samples.sum(axis=1) + 500,
                   {"model": "toy", "overhead_ns": 20.0, "device": "cuda:0" if device else "cpu"},
                   device_samples=samples // 2 if device else None)


def hta_trace_dir(tmp_path, name, profile):
    folder = tmp_path / name
    folder.mkdir()
    profile.export_chrome_trace(folder / "rank0.json")
    return str(folder)


def hta_ops(analysis):
    """HTA's CPU op rows (cat cpu_op) of rank 0 with names decoded: name, iteration, dur (µs)."""
    frame = analysis.t.get_trace(0)
    names = analysis.t.symbol_table.get_sym_table()
    rows = frame[frame["cat"].map(lambda c: names[c]) == "cpu_op"]
    return pd.DataFrame({"name": rows["name"].map(lambda n: names[n]).to_numpy(),
                         "iteration": rows["iteration"].to_numpy(),
                         "dur": rows["dur"].to_numpy(dtype=float)})


def test_hta_keeps_every_step_op_names_and_sub_microsecond_durations(tmp_path):
    trace_analysis = pytest.importorskip("hta.trace_analysis")
    sub_us = np.array([[400, 900, 1, 2000], [410, 910, 2, 2100], [420, 920, 3, 2200]])
    analysis = trace_analysis.TraceAnalysis(
        trace_dir=hta_trace_dir(tmp_path, "t", toy_profile(samples=sub_us)))
    assert list(analysis.t.traces) == [0]                        # rank from distributedInfo
    assert [int(s) for s in analysis.get_profiler_steps()] == [0, 1, 2]  # every run
    ops = hta_ops(analysis)
    assert sorted(ops["iteration"].unique().tolist()) == [0, 1, 2]
    per_op = ops.groupby("name").size()                          # one row per op kind
    assert per_op.to_dict() == {"Conv2d": 6, "ReLU": 3, "operator.add": 3}
    conv_ns = np.sort(np.rint(ops.loc[ops["name"] == "Conv2d", "dur"] * 1000).astype(int))
    assert conv_ns.tolist() == sorted([400, 900, 410, 910, 420, 920])  # ns kept, none 0
    relu_ns = np.rint(ops.loc[ops["name"] == "ReLU", "dur"] * 1000).astype(int)
    assert sorted(relu_ns.tolist()) == [1, 2, 3]


def test_hta_trace_diff_compares_ops_of_two_traces(tmp_path):
    trace_diff = pytest.importorskip("hta.trace_diff")
    from hta.common.trace import Trace
    traces = []
    for name, scale in (("a", 1), ("b", 3)):
        trace = Trace(trace_dir=hta_trace_dir(tmp_path, name, toy_profile(scale)))
        trace.parse_traces()
        traces.append(trace)
    compared = trace_diff.TraceDiff.compare_traces(*traces)
    assert set(OPS.values()) <= set(compared.index)
    assert not set(toy_nodes()["name"]) & set(compared.index)   # no per-node rows
    conv = compared.loc["Conv2d"]
    assert conv["Control_counts"] == conv["Test_counts"] == 2   # two convs in the first step
    assert conv["Test_total_duration"] == pytest.approx(3 * conv["Control_total_duration"])
    assert conv["Control_total_duration"] == pytest.approx((4000 + 9000) / 1000)


def test_hta_reads_the_device_track_as_gpu_annotations(tmp_path):
    trace_analysis = pytest.importorskip("hta.trace_analysis")
    analysis = trace_analysis.TraceAnalysis(
        trace_dir=hta_trace_dir(tmp_path, "gpu", toy_profile(device=True)))
    breakdown = analysis.get_gpu_user_annotation_breakdown(visualize=False)
    assert set(OPS.values()) <= set(breakdown["name"])


def loop_profile_with_torch_handler(folder):
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    handler = torch.profiler.tensorboard_trace_handler(str(folder), worker_name="worker0")
    with pyfxprof.Profiler(model, schedule=pyfxprof.schedule(wait=1, warmup=1, active=3),
                           on_trace_ready=handler) as prof:
        for _ in range(5):
            prof.model(torch.randn(8, 16))
            prof.step()
    return sorted(os.listdir(folder))


def test_torch_tensorboard_handler_writes_traces_tensorboard_shows(tmp_path):
    files = loop_profile_with_torch_handler(tmp_path / "tb")
    assert len(files) == 1 and files[0].startswith("worker0.")
    assert files[0].endswith(".pt.trace.json")
    data_module = pytest.importorskip("torch_tb_profiler.profiler.data")
    from torch_tb_profiler.profiler.run_generator import RunGenerator
    data = data_module.RunProfileData.parse("worker0", "1", str(tmp_path / "tb" / files[0]),
                                            str(tmp_path))
    profile = RunGenerator("worker0", "1", data).generate_run_profile()
    assert {"Overview", "Operator"} <= {view.display_name for view in profile.views}
    steps = profile.overview["steps"]["rows"]
    assert [row[0] for row in steps] == ["2", "3", "4"]  # loop steps, as torch numbers them
    step_us = [row[3] for row in steps]  # CPU Exec per step, µs
    assert all(0 < t < 1e6 for t in step_us)
    # one row per op kind: the loop's Dynamo graph calls torch's linear and relu functions
    ops = {row["name"]: row for row in profile.operation_table_by_name["data"]}
    [linear] = [name for name in ops if "linear" in name]
    [relu] = [name for name in ops if "relu" in name]
    assert len(ops) == 2 and (ops[linear]["calls"], ops[relu]["calls"]) == (6, 3)
