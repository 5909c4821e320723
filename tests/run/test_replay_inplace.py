"""Tests for pyfxprof.run.replay_inplace and the in-place paths of a replay: a generated table
of ops that write to their inputs (methods, functions, operators, modules) is detected and
timed on fresh inputs at every call; ops that do not are not; no replay changes the model."""

import contextlib
import operator

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import pyfxprof
from pyfxprof.run.replay_build import Rebuilt
from pyfxprof.tools.replay_compare import compare_variants
from pyfxprof.run.replay_inplace import fresh_copy, mutates_inputs, on_fresh_copies
from pyfxprof.run.replay_timing import time_alone
from pyfxprof.tools.replay_variants import VariantCall


class Op(nn.Module):
    """One op applied to the input (and a second input of its shape)."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x, y):
        x = x * 1.0  # the op's input is an intermediate, as in a real graph
        return self.op(x, y)


#: (name, op of x and y, whether it writes to x) — methods, functions, operators, out=.
OPS = [
    ("add_", lambda x, y: x.add_(y), True),
    ("mul_", lambda x, y: x.mul_(y), True),
    ("relu_", lambda x, y: x.relu_(), True),
    ("clamp_", lambda x, y: x.clamp_(min=0.0), True),
    ("torch.relu_", lambda x, y: torch.relu_(x), True),
    ("F.relu inplace", lambda x, y: F.relu(x, inplace=True), True),
    ("F.hardtanh inplace", lambda x, y: F.hardtanh(x, inplace=True), True),
    ("operator.iadd", lambda x, y: operator.iadd(x, y), True),
    ("add", lambda x, y: x.add(y), False),
    ("F.relu", lambda x, y: F.relu(x), False),
    ("operator.add", lambda x, y: operator.add(x, y), False),
]

#: (module, whether it writes to its input) — the modules' own `inplace` flags.
MODULES = [
    (lambda: nn.ReLU(inplace=True), True),
    (lambda: nn.Hardtanh(inplace=True), True),
    (lambda: nn.SiLU(inplace=True), True),
    (lambda: nn.ReLU(), False),
    (lambda: nn.BatchNorm1d(16), False),  # in train mode it writes its own buffers
]


@pytest.mark.parametrize("name, op, writes", OPS, ids=[case[0] for case in OPS])
def test_each_op_that_writes_its_input_replays_on_fresh_inputs(name, op, writes):
    x = torch.randn(32, 16)
    prof = pyfxprof.profile(Op(op), (x, torch.randn(32, 16)), runs=2, warmup=1)
    node = prof.nodes["name"].iloc[-1]  # the op (after the mul)
    result = prof.replay(node, budget=0.05)
    assert result.fresh_inputs is writes, (name, prof.nodes[["name", "target"]])
    assert result.warm_ns > 0
    assert ("in place:" in result.table()) is writes


@pytest.mark.parametrize("make, writes", MODULES, ids=lambda v: type(v()).__name__
                         if callable(v) else str(v))
@pytest.mark.parametrize("training", [False, True])
def test_a_modules_replay_leaves_the_model_as_it_was(make, writes, training):
    model = nn.Sequential(nn.Linear(16, 16), make()).train(training)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    prof = pyfxprof.profile(model, (torch.randn(8, 16),), runs=2, warmup=1)
    result = prof.replay("1", budget=0.4, cache="both", variants=["bf16"])
    assert result.fresh_inputs is writes
    assert model.training is training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def spy_target(seen: list):
    """add_ that records, at each call, whether its input is unchanged since it was made."""
    def add_(x):
        seen.append(bool((x == 1.0).all()))
        return x.add_(1.0)
    return add_


def spy_built(seen: list) -> Rebuilt:
    spec = {"args": [{"tensor": [64], "dtype": "float32", "stride": [1], "device": "cpu"}],
            "kwargs": {}}
    built = Rebuilt("add_", "call_function", "spy", spy_target(seen), spec, None, 1000.0)
    built.inputs = lambda seed=0: ((torch.ones(64),), {})  # values the spy can check
    return built


@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_every_timed_call_of_an_in_place_node_gets_inputs_it_never_changed(cache):
    seen: list = []
    built = spy_built(seen)
    built.mutates = mutates_inputs(built.target, *built.inputs())
    assert built.mutates and seen == [True]
    assert time_alone(built, cache, 0.05) > 0
    assert len(seen) > 100 and all(seen)


def test_an_in_place_nodes_variant_blocks_run_on_fresh_inputs():
    seen: list = []
    built = spy_built(seen)
    args, kwargs = built.inputs()
    variant = VariantCall("same", lambda: built.target(*fresh_copy(args)), contextlib.nullcontext,
                          torch.float32, on_fresh_copies(built.target, args, kwargs))
    row, = compare_variants(lambda: built.target(*fresh_copy(args)), [variant], 0.05, 1000.0,
                            on_fresh_copies(built.target, args, kwargs), 32)
    assert row.error == "" and row.max_abs_error == 0
    assert len(seen) > 100 and all(seen)


def test_without_fresh_inputs_the_spy_sees_changed_inputs():  # the spy can fail
    seen: list = []
    target = spy_target(seen)
    x = torch.ones(64)
    for _ in range(3):
        target(x)
    assert seen == [True, False, False]


def test_fresh_copy_keeps_strides_grad_and_nesting():
    x = torch.randn(4, 6)[:, ::2].requires_grad_(False)
    w = torch.randn(3, requires_grad=True)
    copied = fresh_copy({"a": [x, 2], "w": w})
    assert copied["a"][0].stride() == x.stride() and torch.equal(copied["a"][0], x)
    assert copied["a"][1] == 2 and copied["w"].requires_grad
    assert copied["w"].data_ptr() != w.data_ptr()


class Drifting(nn.Module):
    """A user module that changes its own parameter and buffer in place at every call."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(16))
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        with torch.no_grad():
            self.scale.mul_(1.5)
            self.calls.add_(1)
        return x * self.scale


@pytest.mark.filterwarnings("ignore:pyfxprof. the model.s forward changed")
def test_a_module_that_changes_its_own_state_is_restored_after_a_replay():
    model = nn.Sequential(nn.Linear(16, 16), Drifting())
    prof = pyfxprof.profile(model, (torch.randn(8, 16),), runs=2, warmup=1,
                            leaf_modules=[Drifting])
    before = {k: v.clone() for k, v in model.state_dict().items()}
    prof.replay("1", budget=0.2, cache="both", variants=["bf16", "threads=1"])
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
