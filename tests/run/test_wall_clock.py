"""Tests of pyfxprof.run.wall_clock and of meta["wall_s"]: the wall time of profile()'s steps."""

import time

import torch

import pyfxprof
from pyfxprof.run.wall_clock import STEPS, StepClock, format_timings, outside_timed_runs


def test_steps_add_up_and_move():
    clock = StepClock()
    with clock.step("capture"):
        time.sleep(0.01)
    clock.moved("capture", "analysis", 0.004)
    clock.moved("capture", "analysis", None)
    assert clock.seconds["capture"] + clock.seconds["analysis"] >= 0.01
    assert clock.seconds["analysis"] == 0.004


def test_profile_meta_holds_each_steps_wall_time_within_the_call():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    started = time.perf_counter()
    prof = pyfxprof.profile(model, (torch.randn(4, 8),), runs=20, warmup=3, progress=False)
    wall = time.perf_counter() - started
    seconds = prof.meta["wall_s"]
    assert set(seconds) == set(STEPS)
    assert all(value >= 0 for value in seconds.values())
    assert 0 < seconds["timed_runs"] and 0 < seconds["warmup"] and 0 < seconds["analysis"]
    assert sum(seconds.values()) <= wall
    calls = prof.meta["call"]["runs"]  # the user's call, timed after the runs, each plain
    assert calls == 10 and 0 < seconds["call_timed"]  # call beside a call around the graph
    again = pyfxprof.profile(model, (torch.randn(4, 8),), runs=2, warmup=0, progress=False)
    assert again.meta["wall_s"]["analysis"] == 0.0  # the capture is reused: no analysis run


def test_format_timings_totals_and_the_part_outside_the_timed_runs():
    text = format_timings({"imports": 1.5, "timed_runs": 2.0, "rendering": 0.5})
    lines = text.splitlines()
    assert lines[1].split()[-1] == "1.500" and lines[2].split()[-1] == "2.000"
    assert lines[-1].split()[1:3] == ["4.000", "(outside"] and lines[-1].endswith("2.000)")


def test_the_timing_of_the_users_call_is_timed_work_of_its_own():
    seconds = {"imports": 1.0, "timed_runs": 2.0, "call_timed": 1.5, "user_call": 0.25}
    assert outside_timed_runs(seconds) == 1.25
    assert format_timings(seconds).splitlines()[-1].endswith(
        "(outside the timed runs: 1.250; with your call's timing: 2.750)")


def test_without_warmup_runs_the_calls_timing_after_the_runs_is_its_own_step():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    started = time.perf_counter()
    prof = pyfxprof.profile(model, (torch.randn(4, 8),), runs=5, warmup=0, progress=False)
    seconds = prof.meta["wall_s"]
    assert prof.meta["call"]["per_run"] and 0 < seconds["call_timed"]
    assert 0 < seconds["user_call"] and sum(seconds.values()) <= time.perf_counter() - started
