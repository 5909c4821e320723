"""Tests of run.first_touch: the smallest allocation mapped anew on every call, checked against
page faults counted here, and the cost its first touch adds to the triad."""

import sys

import pytest
import torch

from pyfxprof.run import first_touch

pytestmark = pytest.mark.skipif(not first_touch.HAS_GETRUSAGE, reason="needs getrusage")


def faults_per_call(size: int, calls: int = 4) -> list[int]:
    """Minor page faults of each of `calls` allocations of `size` bytes written once as a
    float32 tensor (freed at once), after two such calls."""
    counts = []
    for _ in range(calls + 2):
        before = first_touch.minor_faults()
        torch.zeros(size // 4).add_(1)
        counts.append(first_touch.minor_faults() - before)
    return counts[2:]


def test_allocations_from_the_threshold_on_fault_their_pages_on_every_call():
    threshold = first_touch.first_touch_threshold(torch.device("cpu"))
    if threshold is None:
        pytest.skip("this allocator maps no probed size anew on every call")
    pages = threshold // first_touch.PAGE_BYTES
    for size in (threshold, 2 * threshold, 3 * threshold):
        assert min(faults_per_call(size)) >= pages // 2, size


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mmap threshold")
def test_on_linux_glibc_the_threshold_is_at_most_its_largest_mmap_threshold():
    # glibc maps anything from DEFAULT_MMAP_THRESHOLD_MAX (32 MiB on 64-bit) on every call
    threshold = first_touch.first_touch_threshold(torch.device("cpu"))
    assert threshold is not None and threshold <= 32 << 20


def test_a_gpu_has_no_first_touch():
    assert first_touch.first_touch_threshold(torch.device("cuda")) is None


@pytest.mark.parametrize("megabytes", [64, 96])
def test_a_block_of_runs_counts_the_faults_of_its_fresh_outputs_per_run(megabytes):
    """Outputs glibc maps anew (from 32 MiB) fault every page on every run: the count per
    run is at least half the output's pages, and the kernel's faults per first-touched page
    (faults_per_page) at least half a fault."""
    size, runs = megabytes << 20, 3
    if (first_touch.first_touch_threshold(torch.device("cpu")) or size + 1) > size:
        pytest.skip("this allocator reuses such an allocation")
    b = c = torch.ones(size // 4)
    with first_touch.faults_per_run(runs) as faults:
        for _ in range(runs):
            torch.add(b, c, alpha=3.0)
    assert faults.per_run >= 0.5 * size / first_touch.PAGE_BYTES
    assert first_touch.faults_per_page(b, c) >= 0.5


def test_a_fresh_output_above_the_threshold_costs_more_than_a_kept_one():
    threshold = first_touch.first_touch_threshold(torch.device("cpu"))
    if threshold is None:
        pytest.skip("this allocator maps no probed size anew on every call")
    b = c = torch.ones(2 * threshold // 4)
    assert first_touch.first_touch_cost(b, c, repeats=3) > 0
