"""Tests of user ranges (pyfxprof.loop.ranges): rows in the window's Profile, pairing, and harmlessness
outside a Profiler. Durations are checked from below only (never speed)."""

import threading

import numpy as np
import pandas as pd
import pytest

from pyfxprof import _C
from pyfxprof.capture.ladder import prepare
from pyfxprof.capture.tracing import capture, timed_nodes
from pyfxprof.errors import PyfxprofError
from pyfxprof.views.chrome_trace import chrome_trace
from pyfxprof.loop.profiler import Profiler
from pyfxprof.loop.ranges import Range, Spans, pair_spans, per_run_columns, range_rows
from pyfxprof.timing.recorder import Records
from pyfxprof.loop.schedule import schedule
from tests.models import Net, net_input

B, E = _C.KIND_RANGE_BEGIN, _C.KIND_RANGE_END
SPIN = 200_000
#: The nodes of Net's Dynamo graph (every call group of the loop is a Dynamo capture).
N_NODES = len(prepare(Net().eval(), (net_input(),), "dynamo").frame)


def _profile_of(body, steps: int = 3):
    """The one Profile of a loop running ``body(p)`` then one model call per step."""
    with Profiler(Net().eval()) as p:
        for _ in range(steps):
            body(p)
            p.model(net_input())
            p.step()
    (prof,) = p.profiles
    return prof


def _row(prof, name: str) -> np.ndarray:
    """A range's samples; a span's recorded time is at least what ran inside it, less the
    calibrated empty-range cost that was subtracted."""
    (index,) = np.flatnonzero(prof.nodes["name"] == f"range:{name}")
    return prof.samples[:, index]


def _floor(prof, ns: int, spans: int = 1) -> float:
    return ns - spans * prof.meta["range_overhead_ns"] - spans


def test_a_range_is_a_row_with_its_time_in_each_step():
    prof = _profile_of(lambda p: _spin_in("data", SPIN))
    row = prof.nodes.iloc[-1]
    assert (row["op"], row["target"], row["module_path"], row["module_stack"]) == (
        "range", "data", "", ())
    assert prof.n_nodes == N_NODES + 1 and prof.meta["ranges"] == ["data"]
    assert (_row(prof, "data") >= _floor(prof, SPIN)).all()
    assert prof.meta["coverage"] <= 1.0  # coverage stays that of the model's nodes
    assert "range:data" in prof.table(top=50)


def _spin_in(name: str, ns: int) -> None:
    with Range(name):
        _C._spin_ns(ns)


def test_a_range_opened_twice_in_a_step_counts_the_sum():
    prof = _profile_of(lambda p: (_spin_in("twice", SPIN // 2), _spin_in("twice", SPIN // 2)))
    assert (_row(prof, "twice") >= _floor(prof, SPIN, spans=2)).all()


def test_nested_ranges_and_a_decorator():
    @Range("inner")
    def inner():
        _C._spin_ns(SPIN // 2)
        return 7

    def body(p):
        with Range("outer"):
            assert inner() == 7
            _C._spin_ns(SPIN // 2)

    prof = _profile_of(body)
    assert (_row(prof, "inner") >= _floor(prof, SPIN // 2)).all()
    assert (_row(prof, "outer") >= _row(prof, "inner") + SPIN // 2 - 1_000).all()


def test_a_recursive_decorated_function_nests_in_itself():
    @Range("recurse")
    def recurse(depth):
        _C._spin_ns(10_000)
        return recurse(depth - 1) if depth else 0

    prof = _profile_of(lambda p: recurse(2))
    # three nested spans: 30, 20 and 10 spin-µs, summed per step
    assert (_row(prof, "recurse") >= _floor(prof, 60_000, spans=3)).all()


def test_ranges_in_another_thread_are_recorded():
    def body(p):
        worker = threading.Thread(target=_spin_in, args=("loader", SPIN))
        worker.start()
        worker.join()

    prof = _profile_of(body)
    assert (_row(prof, "loader") >= _floor(prof, SPIN)).all()


def test_ranges_show_in_the_chrome_trace():
    prof = _profile_of(lambda p: _spin_in("data", 1_000))
    events = [e for e in chrome_trace(prof)["traceEvents"] if e.get("name") == "range:data"]
    assert len(events) == 3 and {e["cat"] for e in events} == {"user_annotation"}
    assert events[0]["args"]["target"] == "data" and events[0]["args"]["op"] == "range"


def test_only_active_steps_are_recorded_and_the_buffer_is_left_empty():
    delivered = []
    with Profiler(Net().eval(), schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                  on_trace_ready=delivered.append) as p:
        for _ in range(6):
            _spin_in("data", 1_000)
            p.model(net_input())
            p.step()
    (prof,) = delivered
    assert prof.n_runs == 2 and (_row(prof, "data") > 0).all()
    assert _C.buffer_stats()["pending_records"] == 0


def test_a_range_left_open_or_spanning_the_window_end_is_dropped():
    with Profiler(Net().eval(), schedule=schedule(wait=0, warmup=1, active=2, repeat=1)) as p:
        spanning = Range("spanning")
        for step in range(4):
            if step == 1:
                Range("never closed").__enter__()
                spanning.__enter__()
            _spin_in("data", 1_000)
            p.model(net_input())
            p.step()
        spanning.__exit__(None, None, None)
        Range("exited without entering").__exit__(None, None, None)
    (prof,) = p.profiles
    assert prof.meta["ranges"] == ["data"]
    assert _C.buffer_stats()["pending_records"] == 0


def test_a_range_outside_a_profiler_is_harmless():
    before = _C.buffer_stats()["pending_records"]
    _spin_in("outside", 1_000)

    @Range("outside decorated")
    def double(x):
        return 2 * x

    assert double(4) == 8
    with pytest.raises(KeyError):  # exceptions pass through
        with Range("outside"):
            raise KeyError("x")
    assert _C.buffer_stats()["pending_records"] == before  # no mark at all
    assert repr(Range("data")) == "pyfxprof.record_range('data')"


def test_a_range_name_must_be_a_non_empty_string():
    for bad in ("", None, 3):
        with pytest.raises(PyfxprofError, match="non-empty string"):
            Range(bad)


def _records(rows):
    """Records from (time, id, thread, kind) rows."""
    t, i, th, k = zip(*rows)
    return Records(np.array(t, np.int64), np.array(i, np.uint32), np.array(th, np.uint32),
                   np.array(k, np.uint16))


def test_pair_spans_per_thread_and_name_innermost_first():
    spans = pair_spans(_records([
        (0, 5, 1, B), (1, 5, 2, B), (2, 6, 1, B), (3, 6, 1, E), (4, 5, 2, E),  # 5/t1 still open
        (10, 6, 1, E),                         # an END without a BEGIN
        (11, 6, 1, B), (12, 6, 1, B), (15, 6, 1, E), (19, 6, 1, E),  # 6 nested in itself
        (20, 6, 1, _C.KIND_MARK),              # not a range record
    ]))
    found = sorted(zip(spans.ids.tolist(), spans.begin_ns.tolist(), spans.duration_ns.tolist()))
    assert found == [(5, 1, 3), (6, 2, 1), (6, 11, 8), (6, 12, 3)]


def test_pair_spans_of_nothing_is_empty():
    assert len(pair_spans(_records([(0, 5, 1, E)])).ids) == 0


def test_per_run_columns_give_a_steps_time_to_its_first_call():
    spans = Spans(np.array([7, 7, 9, 9]), np.array([1, 2, 11, 25]), np.array([100, 50, 30, 40]))
    step_starts = np.array([0, 10, 20])
    run_starts = np.array([5, 6, 12])  # two calls in step 0, one in step 1, none in step 2
    ids, columns, lost = per_run_columns(spans, step_starts, run_starts, overhead_ns=10.0)
    assert ids.tolist() == [7, 9]
    assert columns.tolist() == [[130, 0], [0, 0], [0, 20]]
    assert lost == 1  # the span of step 2, which has no call


def test_range_rows_fill_the_extra_columns_keeping_dtypes():
    nodes = pd.DataFrame({"index": [0], "name": ["relu"], "op": ["call_module"],
                          "target": ["relu"], "module_path": ["relu"], "module_type": ["ReLU"],
                          "module_stack": [("relu",)], "inputs": [("x",)],
                          "output_shapes": ["[2] float32"], "flops": np.array([4], np.int64)})
    frame = range_rows(nodes, ["data", "step"])
    assert frame["name"].tolist() == ["relu", "range:data", "range:step"]
    assert frame["index"].tolist() == [0, 1, 2] and frame["flops"].dtype == np.int64
    assert frame.loc[1, "inputs"] == () and frame.loc[2, "output_shapes"] == ""
    assert frame.loc[2, "module_type"] == "range" and frame.loc[2, "flops"] == 0
