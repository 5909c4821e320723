"""Tests of pyfxprof.timing.run_table: runs handed over as RunTimings, incomplete runs, memory checks."""

import numpy as np
import pytest

from pyfxprof import _C
from pyfxprof.errors import PyfxprofError
from pyfxprof.timing.run_table import RunTable, check_fits_in_memory


def _timed(table, targets):
    """One callable per node k, calling timed(k, ...) of the table's TimedCalls."""
    native = _C.timed_calls(table.native)
    for k, target in enumerate(targets):
        native.set(k, target)
    return [lambda x, k=k: native.timed(k, x) for k in range(len(targets))]


def _run(table, calls, raise_in=None):
    table.begin()
    for k, call in enumerate(calls):
        if k == raise_in:
            table.abandon()
            return
        call(_C.now_ns() * 0 + 1)
    table.end()


@pytest.mark.parametrize("spare", [0, 1, 2])
def test_complete_runs_are_kept_and_incomplete_ones_counted(spare):
    table = RunTable(3, spare=spare)
    calls = _timed(table, [_C._busy_loop] * 3)
    _run(table, calls)
    _run(table, calls, raise_in=1)
    assert table.failed_node(["a", "b", "c"]) == "b"  # (the spare columns are no node)
    _run(table, calls[:2])  # a node never ran
    _run(table, calls)
    t = table.take()
    assert t.intervals.shape == (2, 3) and t.incomplete_runs == 2
    if spare:  # the samples are the spare array's first columns: a row added there is free
        assert t.spare.shape == (2, 3 + spare) and np.shares_memory(t.spare, t.intervals)
        assert np.array_equal(t.spare[:, :3], t.intervals)
    else:
        assert t.spare is None
    assert (t.run_totals >= t.intervals.sum(axis=1)).all()
    assert (t.between_nodes >= 0).all()
    assert np.all(np.diff(t.run_starts) > 0)


def test_take_empties_the_table_and_clear_forgets_runs():
    table = RunTable(1)
    calls = _timed(table, [abs])
    _run(table, calls)
    table.clear()
    _run(table, calls)
    assert table.take().intervals.shape == (1, 1)
    assert table.take().intervals.shape == (0, 1)


def test_runs_that_cannot_fit_in_memory_are_refused_with_an_estimate():
    with pytest.raises(PyfxprofError, match=r"use at most [\d,]+ runs") as info:
        RunTable(1000).reserve(10**12)
    assert "\n" not in str(info.value) and "GiB" in str(info.value)
    assert check_fits_in_memory(100, 10, arrays=2) == 100 * (10 * 16 + 32)


def test_a_second_thread_starting_a_run_gets_a_clear_error():
    import threading
    table, errors = RunTable(1), []
    table.begin()

    def other():
        try:
            table.begin()
        except PyfxprofError as error:
            errors.append(str(error))
    worker = threading.Thread(target=other)
    worker.start()
    worker.join()
    table.end()
    assert errors and "one call of a profiled model at a time" in errors[0]
