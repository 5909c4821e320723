"""Tests of run.machine_peaks and run.peaks_cache: peaks measured once per machine, cached with
how and when, re-measured on demand, read (never measured) by profile() into its meta."""

import json

import numpy as np
import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.data.roofline_ops import KINDS
from pyfxprof.errors import PyfxprofError
from pyfxprof.run import machine_peaks as peaks_module
from pyfxprof.run.metadata import cpu_name
from pyfxprof.run.peaks_cache import (CACHE_ENV, CACHE_VERSION, cache_path, cached_peaks,
                                     machine_key)


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """The cache in `tmp_path`; measure_peaks measuring float32 GEMMs only, its calls
    counted, no trial taken as waiting for cores (on a loaded machine every one may: those
    peaks are measured again at each call, which test_cached_peaks_that_waited_... checks)."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(peaks_module, "core_wait_ns", lambda: None)
    calls = []
    real = peaks_module.measure_peaks

    def measure(device):
        calls.append(device)
        return real(device, (torch.float32,))
    monkeypatch.setattr(peaks_module, "measure_peaks", measure)
    return calls


def test_measured_once_cached_with_how_and_when_and_remeasured_on_demand(counted):
    first = pyfxprof.machine_peaks()
    assert len(counted) == 1 and cache_path().exists()
    assert first["flops"]["float32"] > 0 and first["bandwidth"] > 0
    assert set(first["fixed_ns"]) == set(KINDS) and min(first["fixed_ns"].values()) > 0
    assert first["threads"] == torch.get_num_threads() and first["device"] == "cpu"
    assert "triad" in first["how"] and "GEMM" in first["how"] and first["measured_at"]
    assert "first touch" in first["how"] and first["first_touch_ns_per_byte"] >= 0
    assert first["first_touch_bytes"] is None or first["first_touch_bytes"] > 0
    stored = json.loads(cache_path().read_text())["machines"]
    assert stored == {first["key"]: first}
    assert pyfxprof.machine_peaks() == first and len(counted) == 1
    again = pyfxprof.machine_peaks(remeasure=True)
    assert len(counted) == 2 and again["key"] == first["key"]


#: A cached entry as each older cache version wrote it (version 1: no first touch; version
#: 2: no faults per page, which a roofline would take as 1).
OLD_ENTRIES = {1: {"flops": {"float32": 1e11}, "bandwidth": 1e10, "threads": 1},
               2: {"flops": {"float32": 1e11}, "bandwidth": 1e10, "threads": 1,
                   "first_touch_bytes": 32 << 20, "first_touch_ns_per_byte": 0.5}}


def _written_cache(version: int, entry: dict) -> str:
    """A cache file of `version` holding `entry` for this machine's key; returns the key."""
    key = machine_key(torch.device("cpu"), cpu_name())
    cache_path().write_text(json.dumps({"version": version, "machines": {key: entry}}))
    return key


def test_every_older_cache_version_is_listed():
    assert sorted(OLD_ENTRIES) == list(range(1, CACHE_VERSION))


@pytest.mark.parametrize("version", sorted(OLD_ENTRIES))
def test_a_cache_of_an_older_version_is_measured_again_not_used(counted, version):
    key = _written_cache(version, {**OLD_ENTRIES[version], "key": "old"})
    assert cached_peaks("cpu", cpu_name()) is None  # profile() does not store them
    again = pyfxprof.machine_peaks()
    assert len(counted) == 1 and again["key"] == key
    assert again["first_touch_faults_per_page"] > 0
    assert json.loads(cache_path().read_text())["version"] == CACHE_VERSION


def test_cached_peaks_that_waited_for_cores_are_measured_again(counted):
    entry = {**OLD_ENTRIES[max(OLD_ENTRIES)], "first_touch_faults_per_page": 1.0,
             "waited_for_cores": ["float32"]}
    _written_cache(CACHE_VERSION, entry)
    assert cached_peaks("cpu", cpu_name()) == entry  # profile() still has them
    pyfxprof.machine_peaks()
    assert len(counted) == 1


def test_a_cache_of_this_version_is_used_as_written(counted):
    entry = {**OLD_ENTRIES[max(OLD_ENTRIES)], "first_touch_faults_per_page": 0.25}
    _written_cache(CACHE_VERSION, entry)
    assert pyfxprof.machine_peaks() == entry and not counted


def test_profile_reads_the_cached_peaks_and_never_measures(counted, tmp_path):
    model, x = nn.Linear(4, 4), torch.ones(2, 4)
    before = pyfxprof.profile(model, (x,), runs=2, warmup=0, progress=False)
    assert "machine_peaks" not in before.meta and not counted and not cache_path().exists()
    peaks = pyfxprof.machine_peaks()
    after = pyfxprof.profile(model, (x,), runs=2, warmup=0, progress=False)
    assert after.meta["machine_peaks"] == peaks == cached_peaks("cpu", after.meta["cpu"])
    assert len(counted) == 1
    assert after.roofline()["bound"].isin(["compute", "memory", "overhead"]).all()


def test_the_triad_arrays_are_far_larger_than_the_last_level_cache():
    cache = peaks_module.last_level_cache_bytes(torch.device("cpu"))
    b, c = peaks_module.triad_arrays(torch.device("cpu"))
    call, moved = peaks_module.triad_trial((b, c))
    call()
    assert moved == 3 * b.numel() * b.element_size() and b.shape == c.shape
    assert b.numel() * b.element_size() >= max(4 * cache, peaks_module.MIN_ARRAY_BYTES) - 4


def test_trials_are_interleaved_round_by_round():
    order = []
    calls = {name: (lambda name=name: order.append(name)) for name in "abc"}
    times = peaks_module.interleaved_seconds(calls, torch.device("cpu"), rounds=4)
    assert order == list("abc") * 5  # one untimed call of each, then 4 rounds in turn
    assert {name: len(trials.seconds) for name, trials in times.items()} == dict.fromkeys(
        "abc", 4)
    assert all((trials.seconds >= 0).all() and trials.waited.dtype == bool
               for trials in times.values())


def test_the_best_trial_is_of_those_that_had_their_cores():
    trials = peaks_module.Trials(np.array([1.0, 3.0, 2.0]), np.array([True, False, False]))
    assert trials.best() == 2.0 and not trials.all_waited
    every = peaks_module.Trials(np.array([3.0, 2.0]), np.array([True, True]))
    assert every.best() == 2.0 and every.all_waited


def test_a_trial_waited_when_the_threads_waited_a_quarter_of_it(monkeypatch):
    waits = iter([0, 250_000_000, 0, 100_000_000])  # ns read before and after each trial
    monkeypatch.setattr(peaks_module, "core_wait_ns", lambda: next(waits))
    monkeypatch.setattr(peaks_module, "seconds_of", lambda call, device: 1.0)
    assert peaks_module._trial(lambda: None, torch.device("cpu")) == (1.0, True)
    assert peaks_module._trial(lambda: None, torch.device("cpu")) == (1.0, False)


def test_the_gemm_size_is_a_doubling_within_the_device_cap():
    n = peaks_module.gemm_size(torch.float32, torch.device("cpu"))
    assert n >= 256 and n & (n - 1) == 0 and n <= peaks_module.GEMM_MAX_N["cpu"]
    product = peaks_module.gemm_trial(torch.float32, torch.device("cpu"), n)
    assert product().shape == (n, n)


def test_the_how_says_the_rounds_the_sizes_and_the_load(counted):
    how = pyfxprof.machine_peaks()["how"]
    assert f"best of {peaks_module.PEAK_ROUNDS} interleaved rounds" in how
    assert "float32 " in how and "load average" in how


def test_fixed_costs_time_a_minimal_call_of_every_kind():
    costs = peaks_module.fixed_costs(torch.device("cpu"), calls=20, repeats=2)
    assert set(costs) == set(KINDS) and all(ns > 0 for ns in costs.values())


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_peaks_without_cuda_say_so_in_one_line():
    with pytest.raises(PyfxprofError, match="CUDA is not available"):
        pyfxprof.machine_peaks("cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_peaks_come_from_device_timers(counted):
    peaks = pyfxprof.machine_peaks("cuda")
    assert "CUDA events" in peaks["how"] and peaks["device"].startswith("cuda")
    assert peaks["flops"]["float32"] > 0 and peaks["bandwidth"] > 0


def test_an_unwritable_cache_says_what_to_do(counted, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "below"))
    with pytest.raises(PyfxprofError, match=CACHE_ENV):
        pyfxprof.machine_peaks()
