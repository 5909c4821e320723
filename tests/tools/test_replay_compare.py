"""Tests for pyfxprof.tools.replay_compare: a variant known to take longer (a busy-wait of a
length measured in the test) is judged slower with an interval holding its measured change;
the outputs' difference is exact on known values."""

import contextlib
import math
import time

import pytest
import torch

from pyfxprof.tools.replay_compare import compare_variants, output_error
from pyfxprof.tools.replay_variants import VariantCall


def busy(ns: int) -> None:
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


def _per_call(call, calls=200) -> float:
    """The median of single calls' times (a call preempted on a loaded machine is one call)."""
    times = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - start)
    return float(sorted(times)[calls // 2])


@pytest.mark.timing(attempts=3)
def test_a_variant_that_waits_longer_is_slower_by_about_what_it_waits():
    base = lambda: busy(20_000)  # noqa: E731
    slow = VariantCall("slow", lambda: busy(30_000), contextlib.nullcontext, torch.float32)
    same = VariantCall("same", base, contextlib.nullcontext, torch.float32)
    truth = _per_call(slow.call) / _per_call(base) - 1  # measured here, about +50%
    rows = compare_variants(base, [slow, same], 0.4, 20_000.0)
    assert [r.name for r in rows] == ["slow", "same"]
    assert rows[0].verdict == "+" and rows[0].low - 0.1 < truth < rows[0].high + 0.1, (rows, truth)
    assert rows[1].verdict in "=?" and abs(rows[1].change) < 0.1


def test_a_variant_that_fails_is_a_row_saying_why():
    def broken():
        raise RuntimeError("not on this machine\nmore")
    rows = compare_variants(lambda: torch.zeros(1), [VariantCall(
        "fp16", broken, contextlib.nullcontext, torch.float16)], 0.05, 1000.0)
    assert rows[0].error == "RuntimeError: not on this machine" and rows[0].verdict == "?"


@pytest.mark.parametrize("reference, output, expected", [
    (torch.tensor([2.0, -4.0]), torch.tensor([2.0, -3.0]), (1.0, 0.25)),
    ((torch.ones(3), torch.zeros(2)), (torch.ones(3), torch.zeros(2)), (0.0, 0.0)),
    (torch.zeros(2), torch.ones(2), (1.0, math.inf)),
    (torch.ones(3, dtype=torch.float32), torch.ones(3, dtype=torch.bfloat16), (0.0, 0.0)),
])
def test_output_error_on_known_values(reference, output, expected):
    assert output_error(reference, output) == expected


def test_output_error_without_comparable_tensors_is_nan():
    assert all(math.isnan(v) for v in output_error(3, 4))
    assert all(math.isnan(v) for v in output_error(torch.ones(2), torch.ones(3)))
