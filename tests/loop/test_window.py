"""Tests for pyfxprof.loop.window's record of the shapes each call ran at (sizes_seen): the
distinct size values and each run's index into them, against the notes it was given (generated
sequences), and the Profiler's Profiles: a group with dynamic sizes carries them, one without
does not."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyfxprof
from pyfxprof.loop.window import sizes_seen

NOTES = st.integers(1, 3).flatmap(lambda k: st.lists(
    st.tuples(*[st.integers(0, 40)] * k) if k > 1 else st.integers(0, 40), max_size=60))


@settings(max_examples=200, deadline=None)
@given(NOTES, st.integers(-2, 2))
def test_each_run_indexes_its_values_among_the_distinct_ones(noted, extra):
    width = len(noted[0]) if noted and isinstance(noted[0], tuple) else 1
    symbols = tuple(f"s{k}" for k in range(width))
    runs = max(len(noted) + extra, 0)
    found = sizes_seen(symbols, noted, runs)
    if not noted:
        assert found is None
        return
    values = [list(v) if isinstance(v, tuple) else [v] for v in noted]
    assert found["symbols"] == list(symbols)
    assert found["seen"] == sorted(map(list, {tuple(v) for v in values}))
    if runs != len(noted):
        assert found["runs"] is None
    else:
        assert [found["seen"][k] for k in found["runs"]] == values
    assert sizes_seen(symbols, noted, len(noted), incomplete=1)["runs"] is None
    assert sizes_seen((), noted, len(noted)) is None


class Memory(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x, mem=None):
        return self.fc(x) if mem is None else self.fc(x) + mem.sum(1)


def test_only_a_group_with_dynamic_sizes_carries_them():
    model = Memory().eval()
    with torch.no_grad(), pyfxprof.Profiler(model) as p:
        for length in (3, 5, 3, 9):
            model(torch.randn(2, 8))
            model(torch.randn(2, 8), torch.randn(2, length, 8))
    plain, with_memory = p.profiles
    assert "sizes" not in plain.meta["loop"] and "call_dims" not in plain.nodes
    sizes = with_memory.meta["loop"]["sizes"]
    per_call = np.asarray(sizes["seen"])[sizes["runs"]]  # calls x symbols
    assert [3, 5, 3, 9] in per_call.T.tolist()  # the memory's length is one of the symbols
    assert len(sizes["runs"]) == with_memory.samples.shape[0] == 4
    nodes = with_memory.nodes
    linear = nodes["target"].astype(str).str.contains("linear")
    assert linear.any() and (nodes.loc[linear, "call_dims"] == "").all()  # x: static
    assert (nodes.loc[~linear, "call_dims"] != "").any()  # the sum over the memory


def _window_profile(monkeypatch, waits: list) -> pyfxprof.Profile:
    """A Profiler window of 12 calls whose threads' core wait reads `waits` (open, close)."""
    reads = iter(waits)
    monkeypatch.setattr("pyfxprof.loop.window.core_wait_ns", lambda: next(reads))
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU())
    with pyfxprof.Profiler(model) as p:
        for _ in range(12):
            model(torch.randn(4, 32))
    (prof,) = p.profiles
    return prof


def test_a_window_records_its_core_wait_per_run_as_profile_does(monkeypatch):
    # a wait of 10x the window's wall time spread over it: every run waited 10x its time
    prof = _window_profile(monkeypatch, [0, 10 ** 12])
    wall = prof.meta["loop"]["noise"]["wall_ns"]
    expected = 10 ** 12 / wall * float(np.median(prof.run_totals))
    assert prof.meta["core_wait_ns_per_run"] == pytest.approx(expected)
    assert prof.roofline()["waited"].any()  # the roofline marks the rows
    calm = _window_profile(monkeypatch, [5, 5])
    assert calm.meta["core_wait_ns_per_run"] == 0.0 and not calm.roofline()["waited"].any()
    unread = _window_profile(monkeypatch, [None, None])  # no schedstat: no figure
    assert "core_wait_ns_per_run" not in unread.meta
