"""Per-run noise (run/noise.py, data/run_noise.py): the meter, its place in Profiles, saving
and loading, and preemption counted when a busy process shares the profile's CPU."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.data.profile import Profile
from pyfxprof.data.run_noise import NOISE_COLUMNS, check_run_noise, noise_frame
from pyfxprof.errors import PyfxprofError
from pyfxprof.run.noise import RunMeter
from tests.latency_models import LEAVES, Fixed, batch, chain
from tests.toy_profiles import toy_nodes

V1_FILE = Path(__file__).resolve().parents[1] / "fixtures" / "profile_v1.json"
linux_only = pytest.mark.skipif(not RunMeter().enabled, reason="needs getrusage RUSAGE_THREAD")


@linux_only
def test_meter_rows_are_deltas_between_reads():
    meter = RunMeter()
    for _ in range(4):
        meter.read()
        sum(range(20_000))
    rows = meter.between_reads()
    assert rows.shape == (3, len(NOISE_COLUMNS)) and rows.dtype == np.int64
    assert (rows[:, 3] > 0).all() and (rows[:, 2] > 0).all()   # wall and CPU time advance
    assert meter.paired().shape == (2, 4)
    meter.clear()
    assert meter.between_reads() is None


@linux_only
def test_profile_carries_one_noise_row_per_run_and_the_loop_one_per_window():
    model = chain(Fixed(20_000))
    prof = pyfxprof.profile(model, batch(1), runs=6, warmup=2, progress=False,
                            leaf_modules=LEAVES)
    assert prof.run_noise.shape == (6, 4)
    frame = prof.noise()
    # a spinning run's thread is on the CPU the whole run unless it was switched out
    calm = frame[~frame["preempted"]]
    assert (calm["cpu_ns"] >= 0.8 * calm["wall_ns"]).all()
    assert (frame["wall_ns"] >= prof.run_totals).all()
    assert len(prof.meta["warmup_totals_ns"]) == 2
    with pyfxprof.Profiler(torch.nn.ReLU()) as p:
        for _ in range(3):
            p.model(torch.ones(4))
            p.step()
    # the loop reads the noise once per window, never per call (docs/loop.md)
    loop_profile = p.profiles[-1]
    assert loop_profile.run_noise is None
    assert set(loop_profile.meta["loop"]["noise"]) == set(NOISE_COLUMNS)


def test_noise_is_saved_and_loaded(tmp_path):
    noise = np.array([[0, 1, 900, 1000], [3, 0, 400, 2000]])
    prof = Profile(toy_nodes(), np.ones((2, 4), dtype=np.int64), np.array([10, 20]),
                   {"model": "m"}, run_noise=noise)
    prof.save(tmp_path / "p.json")
    loaded = pyfxprof.load(tmp_path / "p.json")
    assert loaded == prof and loaded.run_noise.tolist() == noise.tolist()
    assert loaded.latency().preempted == 1
    assert noise_frame(noise)["stolen_ns"].tolist() == [100, 1600]


def test_a_version_1_file_written_before_noise_still_loads():
    prof = pyfxprof.load(V1_FILE)
    assert prof.run_noise is None and prof.noise() is None
    assert prof.latency().preempted is None and prof.latency().n == prof.n_runs == 5
    assert prof.without_preempted() is prof
    assert "preempted" not in prof.table()


def test_bad_noise_shapes_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"run_noise must have shape \(2, 4\)"):
        check_run_noise(np.zeros((3, 4), dtype=np.int64), 2)
    with pytest.raises(ValueError, match="integers"):
        check_run_noise(np.zeros((2, 4)), 2)
    prof = Profile(toy_nodes(), np.ones((2, 4), dtype=np.int64), np.array([10, 20]), {},
                   run_noise=np.zeros((2, 4), dtype=np.int64))
    prof.save(tmp_path / "p.json")
    text = (tmp_path / "p.json").read_text()
    (tmp_path / "bad.json").write_text(text.replace('"run_noise":{"dtype":"<i8","shape":[2,4]',
                                                    '"run_noise":{"dtype":"<i8","shape":[4,2]'))
    with pytest.raises(PyfxprofError, match=r"run_noise has shape \[4, 2\], expected \[2, 4\] \(runs x noise\)"):
        pyfxprof.load(tmp_path / "bad.json")


def _busy_process_on(cpu: int) -> subprocess.Popen:
    code = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    return subprocess.Popen([sys.executable, "-c", code])


@linux_only
@pytest.mark.timing
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU pinning here")
def test_runs_are_counted_preempted_when_a_busy_process_shares_the_cpu():
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    busy = _busy_process_on(cpu)
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.2)  # let the busy loop start
        model = chain(Fixed(2_000_000), Fixed(2_000_000))
        prof = pyfxprof.profile(model, batch(1), runs=20, warmup=0, progress=False,
                                leaf_modules=LEAVES)
    finally:
        os.sched_setaffinity(0, before)
        busy.kill()
        busy.wait()
    noise = prof.noise()
    assert noise["preempted"].sum() >= 10, noise
    # half of each preempted run's wall time went to the other process
    assert noise["stolen_ns"][noise["preempted"]].median() > 0.2 * noise["wall_ns"].median()
    assert f"{noise['preempted'].sum()} of 20 runs preempted" in prof.table()
    assert prof.without_preempted().n_runs == 20 - noise["preempted"].sum()


def test_brief_switches_by_kernel_threads_do_not_make_a_run_preempted():
    # Runs of 100 ms. Traced on this VM (perf sched_switch), kernel threads (rcu_preempt
    # mostly) switched the profiling thread out ~50 times per second of its CPU time for
    # ~12 µs each: nearly every run has an involuntary switch and loses ~0.05% of its time.
    runs, wall = 40, 100_000_000
    noise = np.tile(np.array([5, 0, wall - 60_000, wall], dtype=np.int64), (runs, 1))
    noise[7] = [1, 0, wall - 5_000_000, wall]      # another task took 5 ms: preempted
    noise[8] = [1, 0, wall - 1_000_000, wall]      # exactly PREEMPTED_SHARE (1%) off the CPU
    noise[9] = [0, 3, wall - 9_000_000, wall]      # 9 ms asleep, never switched out: waiting
    samples = np.full((runs, 4), wall // 4, dtype=np.int64)
    prof = Profile(toy_nodes(), samples, samples.sum(axis=1), {"model": "m"}, run_noise=noise)
    assert prof.noise()["preempted"].to_numpy().nonzero()[0].tolist() == [7, 8]
    assert "2 of 40 runs preempted" in prof.table()
    assert prof.without_preempted().n_runs == 38


def _noisy_profile(preempted_runs, slow_ns=3_000_000, stolen_ns=None):
    runs = 40
    samples = np.full((runs, 4), 250_000, dtype=np.int64)
    noise = np.zeros((runs, 4), dtype=np.int64)
    for run in preempted_runs:
        samples[run, 1] += slow_ns
        noise[run] = [1, 0, 1_000_000, 1_000_000 + (slow_ns if stolen_ns is None else stolen_ns)]
    return Profile(toy_nodes(), samples, samples.sum(axis=1),
                   {"model": "m", "threads": 2, "cores": 2}, run_noise=noise)


def test_advisor_says_when_the_slow_runs_are_the_machine():
    advice = _noisy_profile([3, 17, 29, 35]).advise(rules=["machine_noise"])
    assert len(advice) == 1 and advice[0].severity == "medium"
    evidence = "\n".join(advice[0].evidence)
    assert "4 of 40 runs preempted" in evidence and "4 of the 4 runs at or above p90" in evidence
    assert "--exclude-preempted" in advice[0].action
    assert _noisy_profile([]).advise(rules=["machine_noise"]) == []
    # preempted but neither slower nor in the tail: not the machine's doing
    preempted_not_slower = _noisy_profile([3, 17, 29, 35], slow_ns=0, stolen_ns=100_000)
    assert preempted_not_slower.noise()["preempted"].sum() == 4
    assert preempted_not_slower.advise(rules=["machine_noise"]) == []


def test_advisor_on_a_machine_where_every_run_was_preempted():
    advice = _noisy_profile(range(40)).advise(rules=["machine_noise"])
    assert len(advice) == 1
    assert any("every run was preempted" in line for line in advice[0].evidence)
