"""_C.timed_run (csrc/timed_run.cpp): one run of an instrumented graph as one table row, and
the METH_NOARGS now_ns the Profiler loop reads around each call."""

import operator
import threading

import numpy as np
import pytest

from pyfxprof import _C


class Busy(Exception):
    pass


def _graph(table):
    """A two-node 'instrumented graph': its nodes are timed calls into `table`."""
    calls = _C.timed_calls(table)
    calls.set(0, operator.add)
    calls.set(1, operator.mul)
    timed = calls.timed

    def forward(x, scale=1):
        return timed(1, timed(0, x, 1), scale)
    return forward


def test_a_timed_run_is_one_row_with_the_forwards_result_and_node_times():
    table = _C.SampleTable(2)
    run = _C.timed_run(table, _graph(table), Busy)
    assert run((2,)) == 3 and run((2, 10)) == 30  # the tuple is the call's arguments
    taken = table.take()
    assert taken["samples"].shape == (2, 2) and (taken["samples"] >= 0).all()
    assert (taken["end_ns"] >= taken["last_call_end_ns"]).all()
    assert (taken["first_call_ns"] >= taken["begin_ns"]).all()


def test_a_raising_forward_leaves_its_row_unended_and_the_table_usable():
    table = _C.SampleTable(2)
    run = _C.timed_run(table, _graph(table), Busy)
    with pytest.raises(TypeError) as raised:
        run(("text",))  # "text" + 1 raises in node 0
    assert "str" in str(raised.value)
    assert run((1,)) == 2  # the next run opens its own row
    taken = table.take()
    np.testing.assert_array_equal(taken["samples"][0], [-1, -1])
    assert taken["end_ns"][0] == -1 and taken["end_ns"][1] > 0


def test_a_row_open_on_another_thread_raises_the_busy_error():
    table = _C.SampleTable(2)
    run = _C.timed_run(table, _graph(table), Busy)
    opener = threading.Thread(target=table.begin_run)
    opener.start()
    opener.join()
    with pytest.raises(Busy, match="another thread's run of this model is still open"):
        run((1,))


def test_a_timed_run_takes_one_sequence_of_arguments():
    table = _C.SampleTable(2)
    run = _C.timed_run(table, _graph(table), Busy)
    assert run([4, 2]) == 10  # a list is taken as the tuple it holds
    with pytest.raises(TypeError, match=r"run\(args\), args a sequence"):
        run((1,), (2,))
    with pytest.raises(TypeError):
        run(1)  # not a sequence: nothing is run
    assert table.rows == 1


def test_timed_run_checks_its_arguments():
    table = _C.SampleTable(1)
    with pytest.raises(TypeError, match="table must be"):
        _C.timed_run(object(), abs, Busy)
    with pytest.raises(TypeError, match="forward must be callable"):
        _C.timed_run(table, 42, Busy)
    with pytest.raises(TypeError, match="exception class"):
        _C.timed_run(table, abs, 42)


def test_now_ns_is_a_builtin_reading_the_profilers_clock():
    assert type(_C.now_ns) is type(len)
    first = _C.now_ns()
    _C._spin_ns(100_000)
    assert _C.now_ns() - first >= 100_000
