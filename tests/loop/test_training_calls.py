"""Training loops under Profiler(backward=True): the user's training is unchanged bit for bit,
each call gets its backward per node and the optimizer step as a row."""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.timing.native import _C
from torch.optim.optimizer import _global_optimizer_pre_hooks


def _model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16),
                                torch.nn.Dropout(0.2), torch.nn.ReLU(),
                                torch.nn.Linear(16, 2)).train()
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _train(model, optimizer, batches, profiler=None) -> None:
    torch.manual_seed(1)  # the dropout masks
    for x in batches:
        optimizer.zero_grad()
        loss = (profiler.model if profiler else model)(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        if profiler:
            profiler.step()


def test_weights_after_profiled_steps_are_bit_identical_and_rows_are_filled():
    batches = [torch.randn(6, 8, generator=torch.Generator().manual_seed(i)) for i in range(4)]
    plain, plain_optimizer = _model_and_optimizer()
    _train(plain, plain_optimizer, batches)
    profiled, optimizer = _model_and_optimizer()
    with pyfxprof.Profiler(profiled, backward=True) as p:
        _train(profiled, optimizer, batches, p)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(),
                                                 profiled.state_dict().values()))
    assert all(torch.equal(a.grad, b.grad) for a, b in zip(plain.parameters(),
                                                           profiled.parameters()))
    prof = p.profiles[-1]
    # the first call captures, made by Dynamo: not timed with its backward (counted)
    assert prof.n_runs == 3 and prof.backward_samples is not None
    assert sum(p._untimed.values()) == 1
    frame = prof.to_dataframe().set_index("name")
    modules = frame[frame["module_type"].isin(["Linear", "BatchNorm1d"])]
    # linear, BN, linear (BN's in-place count of batches has no backward)
    assert (modules["backward_min"] > 0).sum() >= 3
    assert frame.loc["(optimizer step)", "min"] > 0
    assert frame.loc["(optimizer step)", "op"] == "optimizer"
    assert not _global_optimizer_pre_hooks  # removed on exit


class _Configured(torch.nn.Module):
    """BatchNorm and dropout in training mode, branching on a dict argument (torch.fx
    cannot trace it: the loop takes it on the dynamo rung)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = _model_and_optimizer()[0]

    def forward(self, x, config):
        y = self.body(x)
        return y * 2 if config["twice"] else y


def test_a_dynamo_captured_model_in_training_mode_trains_bit_identically():
    batches = [torch.randn(6, 8, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    models = []
    for profiled in (False, True):
        model = _Configured().train()  # seeded: the same weights twice
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        p = pyfxprof.Profiler(model, backward=True)
        torch.manual_seed(1)  # the dropout masks
        with p if profiled else contextlib.nullcontext():
            for x in batches:
                optimizer.zero_grad()
                (p.model if profiled else model)(x, {"twice": True}).pow(2).mean().backward()
                optimizer.step()
                p.step() if profiled else None
        models.append(model)
    plain, profiled = (m.state_dict() for m in models)  # BatchNorm's statistics included
    assert all(torch.equal(plain[k], profiled[k]) for k in plain)
    [prof] = p.profiles
    assert prof.meta["capture_mode"] == "dynamo" and prof.backward_samples is not None
    assert (prof.to_dataframe()["backward_min"] > 0).sum() >= 3


class _Branching(torch.nn.Module):
    """Branches on a tensor's value: torch.fx refuses it, Dynamo breaks its graph (the loop
    takes one graph only)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.a(x)
        return self.b(y) if y.sum() > -1e9 else y


@pytest.mark.filterwarnings("ignore::pyfxprof.capture.tracing.CaptureFallbackWarning")
def test_calls_of_several_dynamo_graphs_say_why_they_have_no_backward_columns(tmp_path):
    model = _Branching().train()
    with pyfxprof.Profiler(model, backward=True) as p:
        for _ in range(2):
            p.model(torch.randn(2, 4)).sum().backward()
            p.step()
    prof = p.profiles[-1]
    assert prof.meta["capture_mode"] == "dynamo" and prof.backward_samples is None
    note = prof.meta["backward_note"]
    assert note.startswith("no backward columns") and "\n" not in note
    assert "ran as 2 Dynamo graphs" in note
    prof.export_html(tmp_path / "r.html")
    assert "backward: no backward columns" in (tmp_path / "r.html").read_text()


def test_calls_without_backward_leave_no_backward_columns():
    model, _ = _model_and_optimizer()
    with pyfxprof.Profiler(model.eval(), backward=True) as p:
        with torch.no_grad():
            model(torch.randn(3, 8))
    assert p.profiles[-1].backward_samples is None
    assert "no backward columns" in p.profiles[-1].meta["backward_note"]


def test_two_calls_summed_into_one_backward_leave_no_backward_columns():
    model, optimizer = _model_and_optimizer()
    with pyfxprof.Profiler(model, backward=True) as p:
        for _ in range(2):
            optimizer.zero_grad()
            loss = model(torch.randn(4, 8)).pow(2).mean() + model(torch.randn(4, 8)).sum()
            loss.backward()  # one backward over both calls' outputs
            optimizer.step()
            p.step()
    assert p.profiles and all(prof.backward_samples is None for prof in p.profiles)
    assert "not one backward per recorded call" in p.profiles[-1].meta["backward_note"]


def _plain_step_ns(model, optimizer, x) -> int:
    begin = time.perf_counter_ns()
    optimizer.zero_grad()
    model(x).float().sum().backward()
    optimizer.step()
    return time.perf_counter_ns() - begin


@pytest.mark.timing(attempts=5)  # misses both ways by 5-10% with load 10 on 2 cores
@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")
def test_resnet18_training_step_rows_add_up_to_an_uninstrumented_step():
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet18(num_classes=10).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(2, 3, 32, 32)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two threads on a loaded 2-core machine thrash
    plain = []
    try:  # steps alternate: the model itself (a NONE step), then recorded, and again
        with pyfxprof.Profiler(model, backward=True, schedule=pyfxprof.schedule(
                wait=1, warmup=0, active=1)) as p:
            for _ in range(24):
                none = p.current_action == pyfxprof.ProfilerAction.NONE
                elapsed = _plain_step_ns(p.model, optimizer, x)
                plain += [elapsed] if none else []
                p.step()
    finally:
        torch.set_num_threads(threads)
    rows = [int(prof.samples.sum() + prof.backward_samples.sum()) for prof in p.profiles]
    assert len(rows) == 12 and len(plain) == 12
    assert np.median(rows) == pytest.approx(np.median(plain), rel=0.05)


def test_data_loading_is_a_row():
    model, optimizer = _model_and_optimizer()
    walls = []  # per step: from the step's start to the call's return, timed here (ns)
    with pyfxprof.Profiler(model, backward=True) as p:
        stepped = time.perf_counter_ns()
        for step in range(3):
            _C._spin_ns(2_000_000)  # "loading" 2 ms before each step's call
            optimizer.zero_grad()
            loss = p.model(torch.randn(4, 8)).sum()
            walls.append(time.perf_counter_ns() - stepped)
            loss.backward()
            optimizer.step()
            stepped = time.perf_counter_ns()
            p.step()
    data = p.profiles[-1].to_dataframe().set_index("name").loc["(data loading)"]
    assert data["op"] == "data" and data["count"] == 2  # step 0's call captured: not timed
    # the row lies between the spin and the whole wait before the call's return (the claim
    # ran at capture, so a step's row holds no capture work)
    assert 2_000_000 <= data["min"] <= data["max"] <= max(walls[1:])
