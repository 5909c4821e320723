"""_C.logged_calls (csrc/logged_calls.cpp): the Profiler loop's log of recorded calls, a ring
keeping the newest rows of six ints, read back oldest first."""

import pytest

from pyfxprof import _C
from pyfxprof.timing.native import logged_rows


def test_rows_come_back_oldest_first_as_they_were_appended():
    log = _C.logged_calls(10)
    assert len(log) == 0 and logged_rows(log).tolist() == []
    log.append(10, 20, 0, 3, 1, True)
    log.append(30, 45, 2, 4, 2, False)
    assert len(log) == 2
    assert logged_rows(log).tolist() == [[10, 20, 0, 3, 1, 1], [30, 45, 2, 4, 2, 0]]


def test_a_full_log_keeps_the_newest_rows_in_order():
    log = _C.logged_calls(3)
    for call in range(1, 8):
        log.append(call * 100, call * 100 + 5, 0, 0, call, call == 1)
    assert len(log) == 3
    assert [row[4] for row in logged_rows(log).tolist()] == [5, 6, 7]


def test_int64_extremes_round_trip():
    log = _C.logged_calls(1)
    log.append(2**63 - 1, -(2**63), -1, 0, 2**40, 0)
    assert logged_rows(log).tolist() == [[2**63 - 1, -(2**63), -1, 0, 2**40, 0]]


def test_bad_rows_and_capacities_are_refused():
    log = _C.logged_calls(2)
    with pytest.raises(TypeError, match="takes 6 ints"):
        log.append(1, 2, 3)
    with pytest.raises(TypeError):
        log.append(1, 2, 3, 4, 5, "first")
    with pytest.raises(OverflowError):
        log.append(2**64, 0, 0, 0, 0, 0)
    assert len(log) == 0  # nothing half-written
    with pytest.raises(ValueError, match="at least 1"):
        _C.logged_calls(0)
    with pytest.raises(TypeError, match="cannot create"):
        _C.LoggedCalls()
