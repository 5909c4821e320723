"""Tests of pyfxprof.run.bench_session: one callable's checks, rounds and Measurement."""

import pytest
import torch

from pyfxprof import _C
from pyfxprof.errors import ArgumentError, PyfxprofError
from pyfxprof.run.bench_session import MIN_BLOCKS, BenchSession


def session(fn, *args, **options):
    return BenchSession(fn, args, {}, "f", {"k": 1}, options)


def test_rounds_grow_and_stop_at_the_target():
    s = session(_C._spin_ns, 20_000, target=0.05, budget=5.0)
    steps = []
    while s.stopped is None:
        steps.append(s.step)
        s.round()
    assert s.stopped == "target" and s.blocks >= MIN_BLOCKS
    assert steps[0] == 1 and steps == sorted(steps)
    m = s.measurement()
    assert m.precision <= 0.05 and m.params == {"k": 1} and m.label == "f"


def test_the_budget_counts_this_callables_rounds_only():
    s = session(_C._spin_ns, 20_000, target=1e-9, budget=0.1)
    while s.stopped is None:
        s.round()
    assert s.stopped == "budget" and 0.1 <= s.elapsed < 0.5


def test_a_raising_callable_and_a_too_small_budget_are_one_line():
    with pytest.raises(PyfxprofError, match="raised on its inputs: ZeroDivisionError"):
        session(lambda: 1 / 0)
    with pytest.raises(ArgumentError, match="too small for one call of f"):
        session(_C._spin_ns, 2_000_000, budget=0.0005)


def test_flops_are_counted_where_known():
    s = session(torch.mm, torch.ones(8, 4), torch.ones(4, 2), budget=0.05)
    while s.stopped is None:
        s.round()
    assert s.measurement().flops == 2 * 8 * 4 * 2
    relu = session(torch.relu, torch.ones(8), budget=0.05)
    relu.round()
    assert relu.measurement().flops is None  # element-wise: no formula, unknown
