"""Tests of run.run_counters: the threads' run-queue wait (Linux schedstat) and counters per
run of a block of runs."""

import sys

import pytest

from pyfxprof.run import run_counters


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's schedstat")
def test_the_core_wait_is_read_on_linux_and_never_decreases():
    first = run_counters.core_wait_ns()
    assert isinstance(first, int) and first >= 0
    assert run_counters.core_wait_ns() >= first


def test_without_schedstat_there_is_no_core_wait(monkeypatch):
    monkeypatch.setattr(run_counters, "TASKS", "/nonexistent/task")
    assert run_counters.core_wait_ns() is None
    with run_counters.counted_per_run(run_counters.core_wait_ns, 3) as count:
        pass
    assert count.per_run is None


@pytest.mark.parametrize("reads, runs, per_run", [((10, 70), 3, 20.0), ((70, 10), 3, 0.0),
                                                   ((10, 70), 0, None), ((10, None), 3, None)])
def test_a_counter_per_run_is_its_growth_over_the_runs(reads, runs, per_run):
    """A thread ending during the block takes its count with it: never below 0."""
    values = iter(reads)
    with run_counters.counted_per_run(lambda: next(values), runs) as count:
        pass
    assert count.per_run == per_run
