"""Tests of pyfxprof.timing.call_timer: the GC pause and the loop timing calls on a clock."""

import gc
import itertools

import numpy as np
import pytest

from pyfxprof import _C
from pyfxprof.timing.call_timer import gc_paused, timed_calls


@pytest.mark.parametrize("enabled, collect", itertools.product([True, False], repeat=2))
def test_gc_paused_pauses_and_restores_the_collector_as_it_was(enabled, collect):
    before = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with gc_paused(collect=collect):
            assert not gc.isenabled()
        assert gc.isenabled() == enabled
        with pytest.raises(KeyError), gc_paused(collect=collect):
            raise KeyError("inside")
        assert gc.isenabled() == enabled   # restored after an exception too
    finally:
        (gc.enable if before else gc.disable)()


def test_gc_paused_collect_leaves_no_cyclic_garbage():
    class Node:
        pass

    gc.collect()
    a, b = Node(), Node()
    a.other, b.other = b, a
    del a, b
    with gc_paused(collect=True):
        assert gc.collect() == 0   # the cycle went before the pause began


@pytest.mark.parametrize("calls", [1, 2, 7])
@pytest.mark.parametrize("spin_ns", [0, 20_000])
def test_timed_calls_times_each_call_at_least_its_known_duration(calls, spin_ns):
    per_call = timed_calls(_C._spin_ns, (spin_ns,), calls=calls)
    assert per_call.shape == (calls,) and per_call.dtype == np.int64
    assert (per_call >= spin_ns).all()
    block = timed_calls(_C._spin_ns, (spin_ns,), calls=calls, per_call=False)
    assert block.shape == (1,) and block[0] >= calls * spin_ns


def test_timed_calls_passes_arguments_and_uses_the_clock_given():
    seen = []
    ticks = itertools.count(0, 5)
    times = timed_calls(lambda x, y=0: seen.append((x, y)), (1,), {"y": 2}, calls=3,
                        clock=lambda: next(ticks))
    assert seen == [(1, 2)] * 3
    assert times.tolist() == [5, 5, 5]   # each call read the clock once before, once after
