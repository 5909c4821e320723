"""Tests of run.timed_runs: profile()'s warm-up and timed runs (behaviour, never speed)."""

import pytest
import torch

import pyfxprof
from pyfxprof.capture.ladder import prepare
from pyfxprof.stats.warmup import SETTLED_RUNS
from pyfxprof.errors import PyfxprofError
from pyfxprof.run.timed_runs import AUTO_WARMUP_MAX, timed_runs
from pyfxprof.run.user_call import graph_runs_only
from pyfxprof.run.wall_clock import StepClock
from pyfxprof.timing.executors import executor_for
from tests.latency_models import LEAVES, Fixed, SlowCalls, batch, chain


def _executor(model, x, leaves=()):
    prepared = prepare(model, (x,), "fx", (leaves, (), None))
    return executor_for(model, prepared, "codegen", False), prepared


def test_one_row_per_timed_run_and_one_total_per_warmup_run():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    executor, prepared = _executor(model, torch.randn(2, 4))
    clock = StepClock()
    with executor:
        timings, noise, warmup_totals, warmup, device, counters = timed_runs(
            executor, prepared.args, 3, 2, False, prepared.frame, clock=clock)
    assert timings.intervals.shape == (3, 2) and len(warmup_totals) == 2 and warmup == 2
    assert set(counters) == {"faults_per_run", "core_wait_ns_per_run"}
    assert all(count is None or count >= 0 for count in counters.values())
    assert device is None  # host timing only
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


@pytest.mark.parametrize("slow_calls", [1, 4])
def test_auto_warmup_runs_past_the_models_slow_first_calls(slow_calls):
    """warmup="auto" (the default) stops once the latest SETTLED_RUNS warm-up runs are steady:
    past the model's slow first calls (call 1 is the analysis run; each slow call spins 20 ms
    more than a steady one, so no machine noise passes for it) by at least SETTLED_RUNS runs,
    at most AUTO_WARMUP_MAX in all. The model counts its calls: the warm-up runs are
    meta["warmup"]."""
    slow = SlowCalls(200_000, 20_000_000, range(1, slow_calls + 1))
    with graph_runs_only():  # the model's calls: the analysis run, warm-up and timed runs
        prof = pyfxprof.profile(chain(slow, Fixed(100_000)), batch(1), runs=5, progress=False,
                                leaf_modules=LEAVES)
    warmup = prof.meta["warmup"]
    assert slow.calls == 1 + warmup + 5 and prof.meta["warmup_auto"]
    assert slow_calls - 1 + SETTLED_RUNS <= warmup <= AUTO_WARMUP_MAX


def test_a_warmup_count_runs_exactly_that_many():
    slow = SlowCalls(100_000, 0, ())
    with graph_runs_only():
        prof = pyfxprof.profile(chain(slow), batch(1), runs=3, warmup=10, progress=False,
                                leaf_modules=LEAVES)
    assert slow.calls == 1 + 10 + 3 and prof.meta["warmup"] == 10
    assert not prof.meta["warmup_auto"]
