"""Tests of the native module pyfxprof._C: clock, marks, drain, buffer cap, CUDA events via the fake runtime."""

import ctypes
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from pyfxprof import _C


@pytest.fixture(autouse=True)
def empty_buffer():
    _C.drain()
    yield
    _C.configure_buffer(1 << 21, 1 << 16)


def test_clock_info_describes_a_calibrated_clock():
    info = _C.clock_info()
    assert info["name"] in ("tsc", "steady_clock")
    assert 0 < info["resolution_ns"] < 1000
    assert 0 < info["read_cost_ns"] < 1000
    if info["name"] == "tsc":
        assert 1e8 < info["tsc_hz"] < 1e11


def test_marks_come_back_in_order_as_numpy_arrays():
    for i in range(100):
        _C.mark(i)
    out = _C.drain()
    assert out["dropped"] == 0
    assert out["id"].dtype == np.uint32 and out["timestamp_ns"].dtype == np.int64
    assert out["kind"].dtype == np.uint16 and out["thread"].dtype == np.uint32
    np.testing.assert_array_equal(out["id"], np.arange(100))
    assert np.all(np.diff(out["timestamp_ns"]) >= 0)
    assert np.all(out["kind"] == _C.KIND_MARK)
    assert np.all(out["thread"] == _C.thread_number())
    assert len(_C.drain()["id"]) == 0


def test_mark_kind_stores_the_kind():
    _C.mark_kind(7, _C.KIND_RANGE_BEGIN)
    _C.mark_kind(7, _C.KIND_RANGE_END)
    out = _C.drain()
    assert out["kind"].tolist() == [_C.KIND_RANGE_BEGIN, _C.KIND_RANGE_END]


@pytest.mark.parametrize("bad", [-1, 2**32])
def test_mark_rejects_ids_outside_uint32(bad):
    with pytest.raises(OverflowError, match=r"\[0, 2\*\*32\)"):
        _C.mark(bad)


def test_mark_rejects_huge_ints():
    with pytest.raises(OverflowError):
        _C.mark(10**30)


def test_mark_rejects_non_integers():
    with pytest.raises(TypeError):
        _C.mark("3")


def test_threads_get_their_own_numbers_and_order():
    def worker(base):
        for i in range(1000):
            _C.mark(base + i)

    threads = [threading.Thread(target=worker, args=(k * 10_000,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = _C.drain()
    assert len(out["id"]) == 3000
    for thread in np.unique(out["thread"]):
        ids = out["id"][out["thread"] == thread]
        assert len(ids) == 1000
        np.testing.assert_array_equal(np.diff(ids.astype(np.int64)), 1)


def test_full_buffer_counts_dropped_records():
    _C.configure_buffer(1000, 256)
    stats = _C.buffer_stats()
    assert stats["capacity_records"] == 1024 and stats["record_bytes"] == 32
    for i in range(1500):
        _C.mark(i)
    assert _C.buffer_stats()["dropped_total"] == 476
    out = _C.drain()
    assert out["dropped"] == 476
    np.testing.assert_array_equal(out["id"], np.arange(1024))


def test_configure_buffer_rejects_zero():
    with pytest.raises(ValueError, match=r"must be in 1\.\.2\*\*40"):
        _C.configure_buffer(0)


_IMPOSSIBLE_SIZES = """
from pyfxprof import _C
_C.configure_buffer(1024, 256)
_C.mark(7)
refusals = []
for capacity, chunk in [(2**62, 2**16), (2**63 + 1, 2**16), (2**64 - 1, 1), (2**40, 1)]:
    try:
        _C.configure_buffer(capacity, chunk)
    except ValueError as error:
        refusals.append(str(error).splitlines()[0])
_C.mark(8)
stats = _C.buffer_stats()
print(len(refusals), stats["capacity_records"], stats["chunk_records"], _C.drain()["id"].tolist())
"""


def test_configure_buffer_refuses_impossible_sizes_and_stays_usable():
    # In a child process: before the fix these sizes crashed the interpreter (SIGSEGV).
    done = subprocess.run([sys.executable, "-c", _IMPOSSIBLE_SIZES], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip().split(maxsplit=3) == ["4", "1024", "256", "[7, 8]"]


def test_busy_loop_takes_an_iteration_count():
    assert _C._busy_loop(1000) is None
    with pytest.raises(ValueError, match="iterations must be in"):
        _C._busy_loop(-1)


@pytest.mark.timing
def test_spin_ns_waits_at_least_the_duration():
    # never less (the spin reads the clock until it has passed); more only by what another
    # process took meanwhile, which a second attempt escapes
    spent = _C._spin_ns(200_000)
    assert 200_000 <= spent < 200_000 + 5_000_000


def test_cuda_is_unavailable_until_loaded():
    _C.cuda_unload()
    assert not _C.cuda_available()
    with pytest.raises(_C.CudaUnavailable, match="not loaded|unloaded"):
        _C.cuda_record(1, 0)


def test_cuda_load_reports_missing_library():
    with pytest.raises(_C.CudaUnavailable, match="cannot load /nonexistent/libcudart.so"):
        _C.cuda_load("/nonexistent/libcudart.so")
    assert "cannot load" in _C.cuda_status()["reason"]


@pytest.mark.timing
def test_cuda_events_resolve_per_id_and_pool_is_reused_and_grown(fake_cudart):
    _C.cuda_load(str(fake_cudart), pool_size=4)
    try:
        for _ in range(2):
            for i in range(10):
                _C.cuda_record(100 + i, 0)
                if i == 3:
                    _C._spin_ns(2_000_000)
            out = _C.cuda_resolve()
            np.testing.assert_array_equal(out["id"], np.arange(100, 110))
            assert out["elapsed_ns"][0] == 0
            assert 2_000_000 <= out["elapsed_ns"][4] < 50_000_000
            status = _C.cuda_status()
            assert status["pool_size"] == 16 and status["events_created"] == 16
        assert status["available"] and status["library"] == str(fake_cudart)
    finally:
        _C.cuda_unload()


def test_failed_cuda_record_raises_and_the_run_is_refused(fake_cudart):
    _C.cuda_load(str(fake_cudart), pool_size=8)
    fake = ctypes.CDLL(str(fake_cudart))
    try:
        _C.cuda_record(0, 0)
        fake.fake_cudart_fail_records(1, 700)
        with pytest.raises(_C.CudaError, match="cudaEventRecord failed: an illegal memory access"):
            _C.cuda_record(1, 0)
        with pytest.raises(_C.CudaError, match="incomplete"):
            _C.cuda_resolve()
        _C.cuda_record(2, 0)
        assert _C.cuda_resolve()["id"].tolist() == [2]
    finally:
        _C.cuda_unload()


def test_pyfxprof_cudart_environment_variable_selects_the_library(fake_cudart):
    code = "from pyfxprof import _C; print(_C.cuda_load())"
    env = dict(os.environ, PYFXPROF_CUDART=str(fake_cudart))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == str(fake_cudart)


def test_forced_steady_clock():
    code = "from pyfxprof import _C; print(_C.clock_info()['name'])"
    env = dict(os.environ, PYFXPROF_CLOCK="steady_clock")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "steady_clock"


# --- TimedCalls and SampleTable --------------------------------------------------------------

def _timed_table(nodes, *targets):
    """A table and the builtin timed(node, *args) calling targets[node]."""
    table = _C.SampleTable(nodes)
    calls = _C.timed_calls(table)
    for k, target in enumerate(targets):
        calls.set(k, target)
    return table, calls.timed


def test_timed_calls_return_the_result_and_store_one_duration_each():
    import operator
    table, timed = _timed_table(2, operator.add, _C._spin_ns)
    table.begin_run()
    assert timed(0, 2, 3) == 5 and timed(0, "a", "b") == "ab"  # operator fast path
    assert timed(1, 200_000) >= 200_000
    assert table.end_run()
    taken = table.take()
    assert taken["samples"].shape == (1, 2) and taken["samples"].dtype == np.int64
    assert 200_000 <= taken["samples"][0, 1] < 200_000_000
    assert taken["first_call_ns"][0] >= taken["begin_ns"][0]
    assert taken["last_call_end_ns"][0] <= taken["end_ns"][0]
    assert table.rows == 0  # handed over


def test_timed_is_one_builtin_function_object_for_every_node():
    table, timed = _timed_table(2, abs, abs)
    assert type(timed) is type(len)  # CPython specialises calls of builtins: the fast path
    assert timed.__name__ == "timed" and timed.__module__ == "pyfxprof._C"


def test_timed_method_calls_and_keyword_arguments():
    table = _C.SampleTable(2)
    calls = _C.timed_calls(table)
    calls.set(0, "split", method=True)
    calls.set(1, round)
    table.begin_run()
    assert calls.timed(0, "a b", sep=" ") == ["a", "b"]
    assert calls.timed(1, 2.567, ndigits=1) == 2.6
    table.end_run()
    assert (table.take()["samples"] >= 0).all()


def test_a_raising_target_propagates_and_stores_nothing():
    table, timed = _timed_table(1, lambda: 1 / 0)
    table.begin_run()
    with pytest.raises(ZeroDivisionError):
        timed(0)
    table.end_run()
    np.testing.assert_array_equal(table.take()["samples"], [[-1]])


def test_timed_calls_outside_a_run_or_from_another_thread_are_strays():
    table, timed = _timed_table(1, abs)
    timed(0, -1)  # no run open
    table.begin_run()
    worker = threading.Thread(target=timed, args=(0, -2))
    worker.start()
    worker.join()
    failure = []
    opener = threading.Thread(target=lambda: _catch(table.begin_run, failure))
    opener.start()
    opener.join()
    table.end_run()
    assert table.stray_calls == 2
    assert failure and "another thread's run" in failure[0]
    np.testing.assert_array_equal(table.take()["samples"], [[-1]])


def _catch(function, errors):
    try:
        function()
    except RuntimeError as error:
        errors.append(str(error))


def test_taken_samples_are_handed_over_without_a_copy():
    table, timed = _timed_table(1, abs)
    table.reserve(4)
    for _ in range(3):
        table.begin_run()
        timed(0, 1)
        table.end_run()
    samples = table.take()["samples"]
    assert samples.shape == (3, 1) and not samples.flags.owndata and samples.base is not None


def test_timed_calls_check_their_arguments():
    table = _C.SampleTable(2)
    calls = _C.timed_calls(table)
    with pytest.raises(ValueError, match=r"node must be in \[0, 1\]"):
        calls.set(2, abs)
    with pytest.raises(TypeError, match="callable"):
        calls.set(0, 42)
    with pytest.raises(TypeError, match="method name"):
        calls.set(0, abs, method=True)
    calls.set(0, abs)
    assert len(calls) == 2 and calls.target(0) is abs and calls.target(1) is None
    with pytest.raises(ValueError, match="node 1 has no target"):
        calls.timed(1, 3)
    with pytest.raises(ValueError, match="node 5 has no target"):
        calls.timed(5, 3)
    with pytest.raises(TypeError, match="node number first"):
        calls.timed()
    with pytest.raises(TypeError):
        calls.timed("0", 3)
    calls.set(0, round)  # set again: replaced
    assert calls.target(0) is round and calls.timed(0, 2.4) == 2


def test_a_path_timed_call_looks_its_callable_up_on_every_call():
    class Holder:
        pass
    root, inner = Holder(), Holder()
    root.inner, inner.f = inner, abs
    table = _C.SampleTable(1)
    calls = _C.timed_calls(table)
    calls.set(0, root, path=("inner", "f"))
    table.begin_run()
    assert calls.timed(0, -3) == 3
    inner.f = lambda x: x * 10  # replaced after the entry was set: the new one runs
    assert calls.timed(0, 2) == 20
    table.end_run()
    assert (table.take()["samples"] >= 0).all()
    with pytest.raises(TypeError):
        calls.set(0, root, path=("inner", 3))


def test_timed_calls_and_their_targets_are_garbage_collected():
    import gc
    import weakref

    class Target:
        def __call__(self):
            return 1
    table = _C.SampleTable(1)
    calls = _C.timed_calls(table)
    target = Target()
    target.calls = calls  # a cycle through the entry
    calls.set(0, target)
    alive = weakref.ref(target)
    del target, calls, table
    gc.collect()
    assert alive() is None


def test_an_entry_set_again_while_its_call_runs_is_finished_with_the_old_one():
    table = _C.SampleTable(1)
    calls = _C.timed_calls(table)

    class Root:
        def __getattr__(self, name):  # runs inside the timed call's path lookup
            calls.set(0, abs)  # drops the entry's references to this root and its path
            return Inner()

    class Inner:
        def f(self, x):
            return x + 40

    calls.set(0, Root(), path=tuple(["inner", "f"]))  # the entry holds the only references
    table.begin_run()
    assert calls.timed(0, 2) == 42
    assert calls.timed(0, -3) == 3  # the replacement runs next
    table.end_run()
    assert (table.take()["samples"] >= 0).all()
