"""Tests of the Recorder: disjoint id ranges, records kept for their owners."""

import numpy as np

from pyfxprof import _C
from pyfxprof.timing.recorder import Recorder


def test_ranges_are_disjoint_and_records_wait_for_their_owner():
    recorder = Recorder()
    a, b = recorder.allocate(3), recorder.allocate(3)
    assert b == a + 3
    for i in range(3):
        _C.mark(a + i)
        _C.mark(b + i)
    np.testing.assert_array_equal(recorder.collect(a, 3).id, a + np.arange(3))
    np.testing.assert_array_equal(recorder.collect(b, 3).id, b + np.arange(3))
    assert len(recorder.collect(a, 3)) == 0


def test_ids_wrap_before_the_uint32_limit():
    recorder = Recorder()
    recorder._next_id = 2**32 - 5
    assert recorder.allocate(10) == 1
