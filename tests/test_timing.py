"""Tests of pyfxprof.timing.durations on hand-made records: runs found, incomplete runs, threads, totals."""

import numpy as np

from pyfxprof import _C
from pyfxprof.timing.recorder import Records
from pyfxprof.timing.durations import boundary_timings, paired_timings


def records(rows):
    """rows: (timestamp, id, thread, kind)."""
    ts, ids, threads, kinds = zip(*rows)
    return Records(np.array(ts, np.int64), np.array(ids, np.uint32), np.array(threads, np.uint32),
                   np.array(kinds, np.uint16))


M, B, E = _C.KIND_MARK, _C.KIND_RUN_BEGIN, _C.KIND_RUN_END


def test_boundary_intervals_and_run_totals():
    r = records([(0, 10, 1, B), (5, 10, 1, M), (15, 11, 1, M), (45, 12, 1, M), (50, 10, 1, E),
                 (100, 10, 1, B), (102, 10, 1, M), (110, 11, 1, M), (130, 12, 1, M),
                 (131, 10, 1, E)])
    t = boundary_timings(r, 10, 2)
    assert t.intervals.tolist() == [[10, 30], [8, 20]]
    assert t.run_totals.tolist() == [50, 31]
    assert t.run_starts.tolist() == [5, 102]
    assert t.incomplete_runs == 0


def test_a_run_missing_a_mark_is_left_out_and_counted():
    r = records([(5, 10, 1, M), (15, 11, 1, M), (45, 12, 1, M),
                 (102, 10, 1, M), (130, 12, 1, M),  # lost id 11 (dropped)
                 (200, 10, 1, M), (201, 11, 1, M), (203, 12, 1, M)])
    t = boundary_timings(r, 10, 2)
    assert t.intervals.tolist() == [[10, 30], [1, 2]]
    assert t.incomplete_runs == 1


def test_interleaved_threads_are_separated():
    r = records([(0, 10, 1, M), (1, 10, 2, M), (4, 11, 1, M), (9, 11, 2, M), (10, 12, 2, M),
                 (14, 12, 1, M)])
    t = boundary_timings(r, 10, 2)
    assert sorted(t.intervals.tolist()) == [[4, 10], [8, 1]]


def test_without_run_marks_totals_span_first_to_last_mark():
    r = records([(5, 10, 1, M), (15, 11, 1, M), (45, 12, 1, M)])
    assert boundary_timings(r, 10, 2).run_totals.tolist() == [40]


def test_paired_intervals_are_end_minus_begin():
    r = records([(0, 20, 1, M), (7, 21, 1, M), (10, 22, 1, M), (30, 23, 1, M)])
    assert paired_timings(r, 20, 2).intervals.tolist() == [[7, 20]]


def test_no_records_gives_no_runs():
    empty = records([(0, 99, 1, M)])
    t = boundary_timings(empty, 10, 3)
    assert t.intervals.shape == (0, 3) and t.run_totals.shape == (0,)


def test_overlapping_runs_on_two_threads_get_their_own_totals():
    r = records([(0, 10, 1, B), (2, 10, 2, B), (5, 10, 1, M), (6, 10, 2, M), (15, 11, 1, M),
                 (20, 11, 2, M), (45, 12, 1, M), (48, 12, 2, M), (60, 10, 2, E), (70, 10, 1, E)])
    t = boundary_timings(r, 10, 2)
    totals = dict(zip(t.run_starts.tolist(), t.run_totals.tolist()))
    assert totals == {5: 70, 6: 58}


def test_a_run_whose_begin_was_dropped_falls_back_to_its_marks():
    r = records([(0, 10, 1, B), (5, 10, 1, M), (15, 11, 1, M), (45, 12, 1, M), (50, 10, 1, E),
                 (102, 10, 1, M), (110, 11, 1, M), (130, 12, 1, M), (131, 10, 1, E)])
    assert boundary_timings(r, 10, 2).run_totals.tolist() == [50, 28]


def test_a_run_whose_end_was_dropped_falls_back_to_its_marks():
    r = records([(0, 10, 1, B), (5, 10, 1, M), (15, 11, 1, M), (45, 12, 1, M),
                 (100, 10, 1, B), (102, 10, 1, M), (110, 11, 1, M), (130, 12, 1, M),
                 (131, 10, 1, E)])
    assert boundary_timings(r, 10, 2).run_totals.tolist() == [40, 31]
