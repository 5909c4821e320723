"""GPU timing through the fake CUDA runtime (runs in CI), plus real-GPU checks that skip without one."""

import ctypes

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof import _C
from pyfxprof.capture.placement import place_on_device
from pyfxprof.errors import PyfxprofError
from tests.models import Net, Spin, net_input


@pytest.fixture
def fake_runtime(fake_cudart):
    _C.cuda_load(str(fake_cudart), pool_size=4)
    yield ctypes.CDLL(str(fake_cudart))
    _C.cuda_unload()


def test_device_samples_are_resolved_per_node(fake_runtime):
    prof = pyfxprof.profile(Net(), (net_input(),), runs=3, warmup=1, device_events=True)
    assert prof.device_samples.shape == (3, prof.n_nodes)
    assert prof.device_samples.dtype == np.int64 and (prof.device_samples >= 0).all()
    assert prof.meta["device_events"].endswith("libfake_cudart.so")
    assert 0 < prof.meta["device_busy_share"] <= 1.5
    assert prof.nodes["launch_bound"].dtype == bool
    table = prof.table()
    assert "Device median" in table and "device: busy" in table
    assert prof.meta["device_event_cost_ns"] >= 0 and "event record" in table
    assert prof.nodes["below_resolution"].dtype == bool


def test_compiled_kernels_get_device_time_and_the_launch_bound_flag(fake_runtime):
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    prof = pyfxprof.profile(torch.compile(model), (torch.randn(8, 16),), runs=3, warmup=1,
                            device_events=True, progress=False)
    kernels = prof.nodes["op"].str.endswith("_kernel")  # not the (outside kernels) row
    assert kernels.sum() >= 2 and prof.device_samples.shape == (3, prof.n_nodes)
    assert (prof.device_samples[:, kernels.to_numpy()] > 0).all()
    assert (prof.device_samples[:, ~kernels.to_numpy()] == 0).all()  # host-only rows
    assert prof.meta["device_events"].endswith("libfake_cudart.so")
    assert prof.nodes["launch_bound"].dtype == bool
    assert "Device median" in prof.table()


def test_compiled_models_on_the_cpu_time_the_host_only_by_default(fake_runtime):
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())
    prof = pyfxprof.profile(torch.compile(model), (torch.randn(8, 16),), runs=2, warmup=1,
                            progress=False)
    assert prof.device_samples is None and prof.meta["device_events"] is None


@pytest.mark.timing
def test_fake_device_time_follows_a_node_of_known_duration(fake_runtime):
    model = torch.nn.Sequential(torch.nn.ReLU(), Spin(2_000_000), torch.nn.ReLU())
    prof = pyfxprof.profile(model, (torch.zeros(1),), runs=3, warmup=0, device_events=True)
    # The fake runtime stamps events with the host clock: the spinning node holds the 2 ms.
    assert (prof.device_samples[:, 1] >= 2_000_000).all()
    assert (prof.device_samples[:, 1] > 10 * prof.device_samples[:, 0]).all()


def test_event_pool_is_reused_across_runs_and_grown_for_big_graphs(fake_runtime):
    pyfxprof.profile(Net(), (net_input(),), runs=2, warmup=0, device_events=True)
    created = _C.cuda_status()["events_created"]
    assert _C.cuda_status()["pool_size"] >= 15  # 14 nodes -> 15 boundaries, from a pool of 4
    pyfxprof.profile(Net(), (net_input(),), runs=5, warmup=2, device_events=True)
    assert _C.cuda_status()["events_created"] == created  # reused, not recreated


def test_a_failing_event_record_is_a_clear_error_and_no_profile(fake_runtime):
    fake_runtime.fake_cudart_fail_records(10_000, 700)  # fail from calibration on
    with pytest.raises(PyfxprofError, match="an illegal memory access") as info:
        pyfxprof.profile(Net(), (net_input(),), runs=2, warmup=0, device_events=True)
    assert "\n" not in str(info.value)
    fake_runtime.fake_cudart_fail_records(0, 0)
    prof = pyfxprof.profile(Net(), (net_input(),), runs=2, warmup=0, device_events=True)
    assert prof.device_samples.shape == (2, prof.n_nodes)


FAKE = {}


def fail_next_record_on_second_call(x):
    """Makes the fake runtime fail the next event record, from the second call on."""
    FAKE["calls"] += 1
    if FAKE["calls"] == 2:
        FAKE["lib"].fake_cudart_fail_records(1, 700)
    return x


torch.fx.wrap("fail_next_record_on_second_call")


class FailsInSecondRun(torch.nn.Module):
    def forward(self, x):
        return torch.relu(fail_next_record_on_second_call(x))


def test_a_failure_mid_run_names_the_run_and_builds_no_profile(fake_runtime):
    FAKE.update(calls=0, lib=fake_runtime)
    # The analysis run is call 1, so the first timed run (run 0) fails.
    with pytest.raises(PyfxprofError, match="recording a CUDA event failed in run 0: .*illegal"):
        pyfxprof.profile(FailsInSecondRun(), (torch.zeros(2),), runs=3, warmup=0,
                         device_events=True)


def test_device_timing_without_cuda_says_why():
    _C.cuda_unload()
    with pytest.raises(PyfxprofError, match="device timing needs a usable CUDA runtime"):
        pyfxprof.profile(Net(), (net_input(),), runs=1, device_events=True)


def test_device_timing_needs_codegen(fake_runtime):
    with pytest.raises(PyfxprofError, match="needs mode='codegen'"):
        pyfxprof.profile(Net(), (net_input(),), runs=1, mode="interpreter", device_events=True)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_requesting_cuda_without_a_gpu_is_refused():
    with pytest.raises(PyfxprofError, match="torch sees no CUDA GPU"):
        pyfxprof.profile(Net(), (net_input(),), runs=1, device="cuda")


def test_place_on_device_copies_instead_of_moving_the_model():
    model = Net()
    same, inputs = place_on_device(model, (net_input(),), "cpu")
    assert same is model  # already there: nothing copied
    assert inputs[0].device.type == "cpu"


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@gpu
def test_real_gpu_matmul_nodes_have_device_time():
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024)).cuda()
    prof = pyfxprof.profile(model, (torch.randn(256, 1024, device="cuda"),), runs=10, warmup=3)
    linear = prof.nodes["module_type"] == "Linear"
    assert (np.median(prof.device_samples[:, linear.to_numpy()], axis=0) > 0).all()


@pytest.mark.gpu
@pytest.mark.timing
@gpu
def test_real_gpu_sleep_node_matches_a_separate_reference():
    cycles = 20_000_000

    def sleep(x):
        torch.cuda._sleep(cycles)
        return x

    torch.fx.wrap("sleep")

    class Sleeper(torch.nn.Module):
        def forward(self, x):
            return sleep(x)

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    references = []
    for _ in range(5):
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        torch.cuda.synchronize()
        references.append(start.elapsed_time(end) * 1e6)
    prof = pyfxprof.profile(Sleeper().cuda(), (torch.zeros(1, device="cuda"),), runs=5, warmup=1)
    measured = float(np.median(prof.device_samples[:, 0]))
    assert abs(measured - np.median(references)) <= 0.02 * np.median(references)


@pytest.mark.gpu
@gpu
def test_real_gpu_loop_windows_carry_device_samples():
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU()).cuda()
    x = torch.randn(64, 256, device="cuda")
    with pyfxprof.Profiler(model, schedule=pyfxprof.schedule(wait=0, warmup=1, active=2)) as p:
        for _ in range(3):
            p.model(x)
            p.step()
    assert p.profiles and p.profiles[0].device_samples.shape == (2, 2)
