"""Tests of run.timed_runs: profile()'s warm-up and timed runs (behaviour, never speed)."""

import pytest
import torch

from pyfxprof.capture.ladder import prepare
from pyfxprof.errors import PyfxprofError
from pyfxprof.run.timed_runs import timed_runs
from pyfxprof.run.wall_clock import StepClock
from pyfxprof.timing.executors import executor_for


def _executor(model, x, leaves=()):
    prepared = prepare(model, (x,), "fx", (leaves, (), None))
    return executor_for(model, prepared, "codegen", False), prepared


def test_one_row_per_timed_run_and_one_total_per_warmup_run():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    executor, prepared = _executor(model, torch.randn(2, 4))
    clock = StepClock()
    with executor:
        timings, noise, warmup_totals = timed_runs(executor, prepared.args, 3, 2, False,
                                                   prepared.frame, clock=clock)
    assert timings.intervals.shape == (3, 2) and len(warmup_totals) == 2
    assert noise is None or len(noise) == 3
    assert {"warmup", "timed_runs"} <= set(clock.seconds)


def test_a_model_error_names_the_run_and_the_node():
    class Flaky(torch.nn.Module):
        failing = False

        def forward(self, x):
            if self.failing:
                raise ValueError("bad batch")
            return x

    model = torch.nn.Sequential(torch.nn.ReLU(), Flaky())
    executor, prepared = _executor(model, torch.randn(2, 4), (Flaky,))
    model[1].failing = True  # after the capture's analysis run
    with executor, pytest.raises(PyfxprofError, match="warm-up run 1 of 1") as error:
        timed_runs(executor, prepared.args, 1, 1, False, prepared.frame)
    assert "bad batch" in str(error.value) and "\n" not in str(error.value)
