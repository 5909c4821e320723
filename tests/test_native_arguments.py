"""Every _C binding called with None, wrong types, negative and huge ints, and out of order: a Python exception, never a crash."""

import numpy as np
import pytest

from pyfxprof import _C

BAD_INTS = [None, "3", 1.5, [], -1, -(2**63) - 1, 2**64 + 1, 10**30]  # bad for every int argument

# Module-level bindings that take arguments, with a valid call's arguments (checked to pass below).
TAKES_ARGUMENTS = {
    "mark": (5,), "mark_cuda": None, "_noop": (5,), "mark_kind": (5, 1), "_mark_pybind11": (5,),
    "configure_buffer": (1 << 12, 1 << 10), "_spin_ns": (10,), "_busy_loop": (10,),
    "cuda_set_stream": (0,), "cuda_load": None, "cuda_record": None, "timed_calls": None,
    "timed_run": None, "hot_forward": None, "logged_calls": (4,),
}  # None: no call that succeeds here (no CUDA; timed_calls, timed_run and hot_forward have their own tests)
NO_ARGUMENTS = ["now_ns", "clock_info", "drain", "buffer_stats", "thread_number", "cuda_unload",
                "cuda_available", "cuda_status", "cuda_resolve", "cuda_discard"]


def test_the_lists_here_name_every_binding():
    functions = {n for n in dir(_C) if callable(getattr(_C, n)) and not n.startswith("__")}
    classes = {"SampleTable", "TimedCalls", "TimedRun", "HotForward", "LoggedCalls", "CudaError",
               "CudaUnavailable"}
    assert functions - classes == set(TAKES_ARGUMENTS) | set(NO_ARGUMENTS)


@pytest.fixture(autouse=True)
def restore_buffer():
    yield
    _C.drain()
    _C.configure_buffer(1 << 21, 1 << 16)


@pytest.mark.parametrize("name", sorted(TAKES_ARGUMENTS))
@pytest.mark.parametrize("bad", BAD_INTS, ids=repr)
def test_each_int_argument_refuses_bad_values(name, bad):
    good = TAKES_ARGUMENTS[name] or (1,)
    if name == "cuda_load":  # its path may be None; a load attempt would change cuda_status()
        good = ("/nonexistent/libcudart.so", 4)
        with pytest.raises(TypeError):
            _C.cuda_load(5, 4)
    for position in range(name == "cuda_load", len(good)):
        args = list(good)
        args[position] = bad
        with pytest.raises((TypeError, ValueError, OverflowError, RuntimeError)):
            getattr(_C, name)(*args)


@pytest.mark.parametrize("name", NO_ARGUMENTS)
def test_argumentless_bindings_refuse_arguments(name):
    with pytest.raises(TypeError):
        getattr(_C, name)(None)


def test_valid_calls_pass_and_bounds_are_named():
    for name, args in TAKES_ARGUMENTS.items():
        if args is not None:
            getattr(_C, name)(*args)
    with pytest.raises(ValueError, match=r"duration_ns must be in \[0, 60000000000\]"):
        _C._spin_ns(2**62)  # would spin for 146 years
    with pytest.raises(ValueError, match="iterations must be in"):
        _C._busy_loop(2**62)
    with pytest.raises(ValueError, match="pool_size must be in"):
        _C.cuda_load("/nonexistent/libcudart.so", 2**40)
    with pytest.raises(_C.CudaUnavailable):
        _C.cuda_record(1, 0)  # before any load


def test_timed_calls_needs_a_sample_table():
    for bad in [None, 5, "t", _C]:
        with pytest.raises(TypeError, match="table must be a pyfxprof._C.SampleTable"):
            _C.timed_calls(bad)
    with pytest.raises(TypeError, match="cannot create"):
        _C.TimedCalls()
    with pytest.raises(TypeError, match="cannot create"):
        _C.TimedRun()


def test_set_never_truncates_the_node_or_event_id():
    calls = _C.timed_calls(_C.SampleTable(3))
    for node in [3, -1, 2**32 + 1, 2**63 - 1]:
        with pytest.raises(ValueError, match=r"node must be in \[0, 2\]"):
            calls.set(node, len)
    for node in [2**63 + 1, 2**64 + 1, None, "1", 1.0]:
        with pytest.raises((TypeError, OverflowError)):
            calls.set(node, len)
    for event in [-2, 2**32 - 1, 2**40]:
        with pytest.raises(ValueError, match="cuda_event_id must be in"):
            calls.set(1, len, cuda_event_id=event)
    assert [calls.target(i) for i in range(3)] == [None] * 3  # nothing was set by a refusal
    for bad in [None, "x", 1.0]:
        with pytest.raises(TypeError):
            calls.set(1, bad)
        with pytest.raises(TypeError):
            calls.target(bad)
    with pytest.raises(IndexError):
        calls.target(2**40)


def test_timed_refuses_bad_node_numbers_and_unset_nodes():
    table = _C.SampleTable(2)
    calls = _C.timed_calls(table)
    calls.set(0, len)
    for bad, error in [(None, TypeError), (-1, ValueError), (2, ValueError), (2**64, OverflowError)]:
        with pytest.raises(error):
            calls.timed(bad, [1])
    with pytest.raises(TypeError):
        calls.timed()
    with pytest.raises(ValueError, match="no target set"):
        calls.timed(1, [1])
    assert calls.timed(0, [1, 2]) == 2  # outside a run: called, counted as a stray
    assert table.stray_calls == 1


def test_sample_table_out_of_order_and_huge_sizes():
    for bad in [None, -1, 2**32, "2"]:
        with pytest.raises(TypeError):
            _C.SampleTable(bad)
        with pytest.raises(TypeError):
            _C.SampleTable(2, bad)  # the spare columns
    with pytest.raises(ValueError, match="over 2\\^32 columns"):
        _C.SampleTable(2**32 - 1, 1)
    assert _C.SampleTable(2, 3).nodes == 5
    table = _C.SampleTable(2)
    assert table.end_run() is False  # nothing open
    table.abandon_run()
    table.clear()
    assert table.take()["samples"].shape == (0, 2)
    table.begin_run()
    for bad in [2**63, 2**64 - 1]:
        with pytest.raises((ValueError, MemoryError)):
            table.reserve(bad)
    for bad in [None, -1, 2**64]:
        with pytest.raises(TypeError):
            table.reserve(bad)
    calls = _C.timed_calls(table)
    calls.set(1, abs)
    assert calls.timed(1, -4) == 4  # the open row survived the refused reserves
    assert table.end_run() is True
    taken = table.take()
    assert taken["samples"].shape == (1, 2) and taken["samples"][0, 0] == -1
    assert np.all(taken["samples"][0, 1] >= 0)
