"""run/python_state.py and the Profiler loop's use of it: a model's outputs and Python state
are exactly what they are without the Profiler, over several calls, when its forward reads
a flag, a global or a counter that changes (fx-traced graphs and Dynamo captures alike)."""

import time
import warnings

import numpy as np
import pytest
import torch
from torch import nn

from pyfxprof import Profiler
from pyfxprof.capture.tracing import CaptureFallbackWarning
from pyfxprof.run.python_state import PythonState, python_side_effects

SCALE = 1.0


class Flag(nn.Module):
    use_relu = True

    def __init__(self, dynamo: bool = False):
        super().__init__()
        self.l, self.dynamo = nn.Linear(4, 4), dynamo

    def forward(self, x):
        if self.dynamo and x.shape[0] > 1:  # a branch on a shape: fx cannot trace it, Dynamo can
            x = x + 0
        y = self.l(x)
        return y.relu() if self.use_relu else y


class Counter(Flag):
    def __init__(self, dynamo: bool = False):
        super().__init__(dynamo)
        self.n = 0

    def forward(self, x):
        if self.dynamo and x.shape[0] > 1:
            x = x + 0
        self.n += 1
        return self.l(x) * self.n


class Scaled(Flag):
    def forward(self, x):
        if self.dynamo and x.shape[0] > 1:
            x = x + 0
        return self.l(x) * SCALE


def _flip(model):
    model.use_relu = not model.use_relu


def _rescale(model):
    global SCALE
    SCALE = SCALE + 1.0


def _nothing(model):
    pass


CASES = {"class flag": (Flag, _flip), "counter": (Counter, _nothing), "global": (Scaled, _rescale)}


def _calls(model, x, change, profiled: bool):
    """Five calls, the Python state changed after the second: (outputs, state after each)."""
    outputs, states = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        context = Profiler(model) if profiled else _Null()
        with context:
            for call in range(5):
                if call == 2:
                    change(model)
                outputs.append(model(x))
                states.append((dict(vars(model).get("n") and {"n": model.n} or {}),
                               "use_relu" in vars(model) and model.use_relu, SCALE))
    return outputs, states, context


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


@pytest.mark.parametrize("dynamo", [False, True], ids=["fx", "dynamo"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_and_state_are_the_models_own_over_several_calls(case, dynamo):
    global SCALE
    make, change = CASES[case]
    torch.manual_seed(0)
    plain, profiled = make(dynamo).eval(), make(dynamo).eval()
    profiled.load_state_dict(plain.state_dict())
    x = torch.randn(2, 4)
    SCALE = 1.0
    expected, expected_states, _ = _calls(plain, x, change, profiled=False)
    SCALE = 1.0
    outputs, states, p = _calls(profiled, x, change, profiled=True)
    assert states == expected_states
    assert all(torch.equal(a, b) for a, b in zip(outputs, expected))
    assert "forward" not in vars(profiled)
    modes = {prof.meta["capture_mode"] for prof in p.profiles}
    if case == "counter":  # a forward changing Python state runs as the model's own code
        assert modes == {"hooks"} and sum(prof.n_runs for prof in p.profiles) == 5
        assert "changes Python state" in p.profiles[0].meta["loop"]["python_note"]
    elif not dynamo:  # the fx graph's assumption failed at the third call: the model's own
        (prof,) = p.profiles
        assert modes == {"fx"} and prof.n_runs == 2
        assert prof.meta["loop"]["own_forward_calls"] == 3
        assert "3 calls ran the model's own forward" in p.summary()
    else:  # Dynamo's guards refused the third call: a second capture serves the rest
        assert modes == {"dynamo"} and sum(prof.n_runs for prof in p.profiles) == 5


def test_an_equal_new_value_keeps_the_graph_and_a_restored_value_takes_it_back():
    global SCALE
    model, x = Scaled().eval(), torch.randn(2, 4)
    SCALE = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Profiler(model) as p:
            outputs = [model(x)]
            SCALE = float("1")  # a new object of an equal value: still the graph's
            outputs.append(model(x))
            SCALE = 2.0
            outputs.append(model(x))  # the model's own forward
            SCALE = 1.0
            outputs.append(model(x))
    (prof,) = p.profiles
    assert prof.n_runs == 3 and prof.meta["loop"]["own_forward_calls"] == 1
    assert torch.equal(outputs[2], model.l(x) * 2.0) and torch.equal(outputs[3], outputs[0])


def test_python_state_watches_flags_parameters_classes_and_globals():
    model = Scaled().eval()
    state = PythonState(model)
    assert state.holds()
    model.l.weight = nn.Parameter(model.l.weight.detach().clone())  # a replaced parameter
    assert not state.holds() and state.changed() == ["Linear.weight"]
    state.restore()
    assert state.holds()
    Flag.use_relu = False  # a class attribute
    try:
        assert state.changed() == ["Flag.use_relu"]
    finally:
        Flag.use_relu = True
    assert state.holds()
    global SCALE
    before, SCALE = SCALE, SCALE + 1
    try:
        assert state.changed() == [f"{__name__}.SCALE"]
    finally:
        SCALE = before


def test_a_leaf_modules_own_state_is_run_by_the_graph_and_capture_changes_are_undone():
    model = Counter().eval()
    _, changes = python_side_effects(model, lambda: model(torch.randn(1, 4)))
    assert [label for _, label in changes] == ["Counter.n"] and model.n == 0
    wrapper = nn.Sequential(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureFallbackWarning)
        with Profiler(wrapper, leaf_modules=[Counter]) as p:
            outputs = [wrapper(torch.ones(1, 4)) for _ in range(3)]
    assert model.n == 3 and p.profiles[0].meta["capture_mode"] == "fx"
    assert [round((o / outputs[0]).mean().item()) for o in outputs] == [1, 2, 3]


def _spin(seconds: float) -> None:
    """Pure Python work (no tensor op: no node of a traced graph)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class PythonHeavy(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)

    def forward(self, x):
        _spin(0.002)
        return self.l(x)


@pytest.mark.timing
def test_the_users_call_is_timed_beside_the_graph_and_is_the_time_to_first_token():
    model, x = PythonHeavy().eval(), torch.randn(1, 4)
    alone = []  # the truth: the model's own call, timed alone as the Profiler times it
    for _ in range(3):
        start = time.perf_counter_ns()
        model(x)
        alone.append(time.perf_counter_ns() - start)
    alone = float(np.median(alone))
    with Profiler(model) as p:
        outputs = [model(x) for _ in range(3)]
    (prof,) = p.profiles
    own = prof.meta["loop"]["own_call_ns"]
    assert 0.8 * alone <= own <= 3.0 * alone + 2e6  # (a loaded machine preempts the spin)
    assert float(np.median(prof.run_totals)) < own / 4  # the graph alone: no Python spin
    latency = p.generation_latency()
    assert latency["ttft_ns"]["median"] == pytest.approx(own)
    assert latency["graph_ttft_ns"]["median"] < own / 4
    assert "the model's own forward" in prof.table()
    assert all(torch.equal(out, model(x)) for out in outputs)


def test_the_users_call_is_not_run_again_where_a_second_run_could_change_the_model():
    class InPlace(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("seen", torch.zeros(4))

        def forward(self, x):
            self.seen.add_(x.sum(0))
            return x * 2

    model, x = InPlace().eval(), torch.ones(2, 4)
    with Profiler(model) as p:
        for _ in range(3):
            model(x)
    assert p.profiles[0].meta["loop"]["own_call_ns"] is None
    assert model.seen.tolist() == [6.0] * 4  # three calls, each once
    train = PythonHeavy().train()
    with Profiler(train) as p:
        train(x)
    assert p.profiles[0].meta["loop"]["own_call_ns"] is None
