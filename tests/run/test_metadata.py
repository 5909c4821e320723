"""Tests of pyfxprof.run.metadata: the one meta builder of profile() and the Profiler loop."""

from types import SimpleNamespace

import numpy as np
import torch

import pyfxprof
from pyfxprof.run.metadata import cpu_name, environment_meta, fusion_meta, run_meta
from tests.models import Net, net_input

# The keys every Profile's meta has, whether profile() or the Profiler loop made it.
SHARED_KEYS = {"model", "device", "device_events", "runs", "warmup", "mode", "capture_mode",
               "capture_notes", "grad", "training", "given_training", "autograd",
               "input_shapes", "incomplete_runs", "dropped_records",
               "overhead_ns", "versions", "platform", "cpu", "cores", "threads", "clock",
               "timestamp", "argv"}


def _fake_run(runs: int = 3, incomplete: int = 0):
    executor = SimpleNamespace(calibration=SimpleNamespace(
        as_meta=lambda: {"overhead_ns": 25.0, "overhead_method": "fake"}))
    timings = SimpleNamespace(intervals=np.zeros((runs, 2), np.int64), incomplete_runs=incomplete)
    return executor, timings


def test_run_meta_states_the_run_the_calibration_and_the_environment():
    executor, timings = _fake_run(runs=4, incomplete=2)
    meta = run_meta(torch.nn.ReLU(), "relu-net", device="cpu", device_events=False,
                    executor=executor, captured=SimpleNamespace(mode="hooks", notes=["a note"]),
                    timings=timings, warmup=3, mode="hooks", grad=True, input_shapes="[2] f32",
                    dropped_records=5, training=True, given_training=True, autograd="grad")
    assert SHARED_KEYS <= set(meta)
    assert (meta["model"], meta["runs"], meta["incomplete_runs"], meta["warmup"]) == \
        ("relu-net", 4, 2, 3)
    assert meta["capture_mode"] == "hooks" and meta["capture_notes"] == ["a note"]
    assert meta["device_events"] is None and meta["dropped_records"] == 5 and meta["grad"] is True
    assert meta["overhead_ns"] == 25.0 and meta["overhead_method"] == "fake"
    assert "fused_pairs" not in meta


def test_run_meta_defaults_the_name_to_the_model_class_and_adds_the_callers_keys():
    executor, timings = _fake_run()
    meta = run_meta(Net(), None, device="cpu", device_events=False, executor=executor,
                    captured=SimpleNamespace(mode="fx", notes=[]), timings=timings, warmup=0,
                    mode="codegen", grad=None, input_shapes="", dropped_records=0,
                    flops=123, loop={"window": 0})
    assert meta["model"] == "Net" and meta["flops"] == 123 and meta["loop"] == {"window": 0}


def test_fusion_meta_lists_fused_pairs_of_a_fused_model_only():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).eval()
    fused = pyfxprof.fuse_conv_bn(model)
    assert fusion_meta(model) == {}
    assert fusion_meta(fused) == {"fused_pairs": [list(p) for p in fused.fusion_report.fused]}
    assert len(fusion_meta(fused)["fused_pairs"]) == 1


def test_environment_meta_has_versions_clock_and_a_utc_time_stamp():
    meta = environment_meta()
    assert meta["versions"]["torch"] == torch.__version__
    assert meta["versions"]["pyfxprof"] == pyfxprof.__version__
    assert meta["clock"]["name"] in ("tsc", "steady_clock") and meta["cores"] >= 1
    assert meta["timestamp"].endswith("+00:00") and meta["threads"] == torch.get_num_threads()
    assert isinstance(cpu_name(), str) and cpu_name() == meta["cpu"]


def test_profile_and_profiler_loop_write_the_same_shared_keys():
    by_profile = pyfxprof.profile(Net(), (net_input(),), runs=2, warmup=1, progress=False).meta
    with pyfxprof.Profiler(Net(), example_inputs=(net_input(),)) as p:
        for _ in range(2):
            p.model(net_input())
            p.step()
    by_loop = p.profiles[0].meta
    assert SHARED_KEYS <= set(by_profile) and SHARED_KEYS <= set(by_loop)
    assert set(by_loop) - set(by_profile) == {"loop"}
    assert by_profile["flops"] == by_loop["flops"] > 0  # each call group's own analysis
