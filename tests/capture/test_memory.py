"""Tests of pyfxprof.capture.memory: CUDA allocator deltas and peaks per node (a stand-in for
torch.cuda's statistics here: no GPU is needed)."""

from unittest import mock

import pytest
import torch

from pyfxprof.capture import memory
from pyfxprof.capture.memory import NodeMemory, cuda_device_of, cuda_node_memory


class FakeAllocator:
    """torch.cuda's allocator statistics for one device, driven by the test."""

    def __init__(self, allocated: int):
        self.allocated, self.peak, self.calls = allocated, allocated, []

    def install(self, monkeypatch):
        cuda = memory.torch.cuda
        monkeypatch.setattr(cuda, "synchronize", lambda device: self.calls.append("sync"))
        monkeypatch.setattr(cuda, "memory_allocated", lambda device: self.allocated)
        monkeypatch.setattr(cuda, "max_memory_allocated", lambda device: self.peak)
        monkeypatch.setattr(cuda, "reset_peak_memory_stats", self.reset)

    def reset(self, device):
        self.calls.append("reset")
        self.peak = self.allocated

    def allocate(self, size: int):
        self.allocated += size
        self.peak = max(self.peak, self.allocated)


CUDA = torch.device("cuda", 0)


def test_without_a_cuda_device_nothing_is_measured_or_called(monkeypatch):
    monkeypatch.setattr(memory.torch.cuda, "synchronize", mock.Mock(side_effect=AssertionError))
    for device in (None, torch.device("cpu")):
        with cuda_node_memory(device) as measured:
            torch.ones(100)
        assert measured == NodeMemory(0, 0, 0)


def test_delta_and_peak_above_the_start_are_measured(monkeypatch):
    allocator = FakeAllocator(allocated=1000)
    allocator.install(monkeypatch)
    with cuda_node_memory(CUDA) as measured:
        allocator.allocate(4000)   # a temporary
        allocator.allocate(-4000)
        allocator.allocate(512)    # the output stays
    assert measured == NodeMemory(alloc_delta_bytes=512, peak_bytes=4000,
                                  absolute_peak_bytes=5000)
    assert allocator.calls == ["sync", "reset", "sync"]


def test_a_node_that_frees_memory_has_a_negative_delta_and_no_peak(monkeypatch):
    allocator = FakeAllocator(allocated=1000)
    allocator.install(monkeypatch)
    with cuda_node_memory(CUDA) as measured:
        allocator.allocate(-600)
    assert measured.alloc_delta_bytes == -600 and measured.peak_bytes == 0
    assert measured.absolute_peak_bytes == 1000


def test_measured_even_when_the_node_raises(monkeypatch):
    allocator = FakeAllocator(allocated=0)
    allocator.install(monkeypatch)
    with pytest.raises(RuntimeError, match="boom"):
        with cuda_node_memory(CUDA) as measured:
            allocator.allocate(64)
            raise RuntimeError("boom")
    assert measured.alloc_delta_bytes == 64 and allocator.calls[-1] == "sync"


def test_cuda_device_of_is_the_first_cuda_tensor():
    on_cuda = mock.Mock(spec=torch.Tensor, is_cuda=True, device=torch.device("cuda", 1))
    assert cuda_device_of((torch.ones(1), 3, on_cuda)) == torch.device("cuda", 1)
    assert cuda_device_of((torch.ones(1), "text")) is None and cuda_device_of(()) is None
