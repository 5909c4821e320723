"""pyfxprof's Chrome traces in the clients users open them with: Holistic Trace Analysis and
torch-tb-profiler (TensorBoard), fed by torch.profiler.tensorboard_trace_handler."""

import os

import numpy as np
import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.data.profile import Profile
from toy_profiles import toy_nodes

SAMPLES = np.array([[4000, 9000, 1000, 2000], [4100, 9100, 1100, 2100],
                    [4200, 9200, 1200, 2200], [3900, 8900, 900, 1900]], dtype=np.int64)


def toy_profile(scale=1, device=False):
    samples = SAMPLES * scale
    return Profile(toy_nodes(), samples, samples.sum(axis=1) + 500,
                   {"model": "toy", "overhead_ns": 20.0, "device": "cuda:0" if device else "cpu"},
                   device_samples=samples // 2 if device else None)


def hta_trace_dir(tmp_path, name, profile):
    folder = tmp_path / name
    folder.mkdir()
    profile.export_chrome_trace(folder / "rank0.json")
    return str(folder)


def test_hta_finds_rank_steps_and_diffs_two_traces(tmp_path):
    trace_analysis = pytest.importorskip("hta.trace_analysis")
    trace_diff = pytest.importorskip("hta.trace_diff")
    from hta.common.trace import Trace
    control = hta_trace_dir(tmp_path, "control", toy_profile())
    analysis = trace_analysis.TraceAnalysis(trace_dir=control)
    assert list(analysis.t.traces) == [0]                        # rank from distributedInfo
    assert [int(s) for s in analysis.get_profiler_steps()] == [0, 1, 2]  # last step dropped
    traces = []
    for name, scale in (("a", 1), ("b", 3)):
        trace = Trace(trace_dir=hta_trace_dir(tmp_path, name, toy_profile(scale)))
        trace.parse_traces()
        traces.append(trace)
    compared = trace_diff.TraceDiff.compare_traces(*traces)
    assert set(toy_nodes()["name"]) <= set(compared.index)
    assert (compared.loc["layer1_0_conv1", "Test_total_duration"]
            > compared.loc["layer1_0_conv1", "Control_total_duration"])


def test_hta_reads_the_device_track_as_gpu_annotations(tmp_path):
    trace_analysis = pytest.importorskip("hta.trace_analysis")
    analysis = trace_analysis.TraceAnalysis(
        trace_dir=hta_trace_dir(tmp_path, "gpu", toy_profile(device=True)))
    breakdown = analysis.get_gpu_user_annotation_breakdown(visualize=False)
    assert set(toy_nodes()["name"]) <= set(breakdown["name"])


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
    assert [row[0] for row in steps] == ["0", "1", "2"]
    step_us = [row[3] for row in steps]  # CPU Exec per step, µs
    assert all(0 < t < 1e6 for t in step_us)
    ops = {row["name"]: row for row in profile.operation_table_by_name["data"]}
    assert {"_0", "_1", "_2"} <= set(ops) and all(ops[n]["calls"] == 3 for n in ("_0", "_1"))
