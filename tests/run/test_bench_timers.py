"""Tests of pyfxprof.run.bench_timers: block sizes, the block of native timed calls, and the
Python baseline timers."""

import numpy as np
import pytest
import torch

from pyfxprof import _C
from pyfxprof.run.bench_timers import (BASELINES, MAX_BLOCK_CALLS, BlockTimer, block_module,
                                       block_size, python_timed_block)


def test_block_size_aims_at_half_a_millisecond_within_bounds():
    assert block_size(1_000) == MAX_BLOCK_CALLS
    assert block_size(10_000) == 50
    assert block_size(10_000_000) == 1


def test_block_module_calls_the_callable_itself_and_modules_as_submodules():
    module = block_module(torch.nn.ReLU(), 1, ["inplace_out"], 3)
    calls = [n for n in module.graph.nodes if n.op == "call_module"]
    assert len(calls) == 3 and all(n.target == "fn" for n in calls)
    assert list(calls[0].kwargs) == ["inplace_out"]
    partial = block_module(lambda: None, 0, [], 2)  # no source, no qualified name needed
    assert sum(n.op == "call_function" for n in partial.graph.nodes) == 2


def test_each_call_and_each_block_is_timed_with_the_timer_cost_subtracted():
    timer = BlockTimer(_C._spin_ns, (30_000,), {}, 3)
    timer.run(4)
    calls, blocks, device = timer.take()
    assert calls.shape == (4, 3) and blocks.shape == (4,) and device is None
    assert (calls >= 30_000).all() and np.median(calls) < 30_000 * 1.5  # a call may be preempted
    # the block holds its calls, plus the little between them
    assert (blocks >= calls.sum(axis=1)).all()
    assert np.median(blocks - calls.sum(axis=1)) < 30_000
    assert timer.take()[0].shape == (0, 3)  # taken once


def test_keyword_arguments_reach_the_callable():
    seen = []
    timer = BlockTimer(lambda a, *, b: seen.append((a, b)), (1,), {"b": 2}, 2)
    timer.run(1)
    assert seen == [(1, 2)] * 2


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_python_baselines_give_ns_per_call(name):
    values = python_timed_block(name, _C._spin_ns, (20_000,), {}, 5)
    assert values.shape == ((5,) if BASELINES[name][1] else (1,))
    if name.startswith("perf_counter"):
        assert (values >= 20_000).all()
    assert np.isfinite(values).all()

