"""Tests of the Recorder: disjoint id ranges, records kept for their owners (bounded), drop
counts per profile, profiles started on a full buffer."""

import numpy as np
import pytest
import torch

from pyfxprof import _C
from pyfxprof.run.runner import profile
from pyfxprof.timing.recorder import RECORDER, Recorder


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


def overfill(extra=100):
    for _ in range(_C.buffer_stats()["capacity_records"] + extra):
        _C.mark(RECORDER.allocate(1))  # owned by nobody who collects


def small_model():
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())


@pytest.fixture
def small_buffer():
    _C.drain()
    _C.configure_buffer(1 << 16, 1 << 12)
    yield
    _C.configure_buffer(1 << 21, 1 << 16)
    _C.drain()  # leave no record pending for later tests (the buffer and the shared recorder)
    RECORDER.collect(0, 2**32)


@pytest.mark.parametrize("mode, capture", [("codegen", "fx"), ("interpreter", "fx"),
                                           ("codegen", "hooks"), ("codegen", "whole")])
def test_a_profile_started_on_a_full_buffer_works_and_counts_only_its_drops(
        small_buffer, mode, capture):
    overfill()
    prof = profile(small_model(), (torch.randn(2, 4),), runs=3, warmup=1, mode=mode,
                   capture=capture, progress=False)
    assert prof.n_runs == 3 and prof.meta["dropped_records"] == 0
    again = profile(small_model(), (torch.randn(2, 4),), runs=3, warmup=1, progress=False)
    assert again.meta["dropped_records"] == 0


def test_foreign_records_do_not_stay_pending(small_buffer):
    recorder = Recorder()
    mine = recorder.allocate(2)
    for _ in range(10):
        _C.mark(recorder._next_id + 7)  # an id nobody was given
    _C.mark(mine)
    assert recorder.collect(mine, 1).id.tolist() == [mine]
    assert recorder._pending is None and recorder.discarded_pending == 10


def test_pending_records_are_bounded_by_the_buffer_capacity(small_buffer):
    recorder = Recorder()
    other = recorder.allocate(1)
    capacity = _C.buffer_stats()["capacity_records"]
    for _ in range(3):
        for _ in range(capacity // 2):
            _C.mark(other)
        recorder.start()
    assert len(recorder._pending) == capacity
    assert recorder.discarded_pending == 3 * (capacity // 2) - capacity
