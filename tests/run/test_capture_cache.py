"""Tests of the capture cache (pyfxprof.run.capture_cache): a second Profiler block reuses
the model's capture; a change of the model's code, structure, dtype, device, training flag or
state its forward reads (attributes, containers, configs, globals, closures) captures again;
memory stays bounded."""

import warnings

import pytest
import torch

from pyfxprof.run import capture_cache
from pyfxprof.run.capture_cache import CAPTURES, CaptureCache, fingerprint
from pyfxprof.loop.profiler import Profiler


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.scale = 2.0  # a traced graph bakes it in

    def forward(self, x):
        return self.linear(x) * self.scale


class Subtracted(Scaled):
    def forward(self, x):
        return self.linear(x) - self.scale


def _block(model, x):
    """(the output, whether the group came from the cache) of one Profiler block."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Profiler(model) as p:
            out = model(x)
    group = next(iter(p._groups.values()))
    return out, group.cached, p


def test_a_second_block_reuses_the_capture_and_gives_the_same_output():
    model, x = Scaled().eval(), torch.randn(2, 4)
    first, cached, _ = _block(model, x)
    assert not cached
    second, cached, p = _block(model, x)
    assert cached and torch.equal(first, second) and torch.equal(second, model(x))
    assert "(capture dynamo from the cache in " in p.summary()
    assert p.profiles[0].n_runs == 1 and p.profiles[0].n_nodes == 2
    _, cached, _ = _block(model, torch.randn(3, 4))  # another signature
    assert not cached


@pytest.mark.parametrize("change", ["code", "structure", "parameter", "dtype", "training",
                                   "attribute"])
def test_a_changed_model_is_captured_again(change):
    model, x = Scaled().eval(), torch.randn(2, 4)
    _block(model, x)
    if change == "code":
        model.__class__ = Subtracted
    elif change == "structure":
        model.linear = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    elif change == "parameter":  # replaced, not updated in place
        model.linear.weight = torch.nn.Parameter(torch.ones(4, 4))
    elif change == "dtype":
        model.double()
        x = x.double()
    elif change == "training":
        model.train()
    else:
        model.scale = 3.0
    out, cached, _ = _block(model, x)
    assert not cached
    with torch.no_grad():
        assert torch.allclose(out, model(x))


def test_the_fingerprint_follows_the_device_not_the_values():
    model = Scaled()
    before = fingerprint(model)
    with torch.no_grad():
        model.linear.weight.add_(1.0)  # an optimizer step: same tensor, new values
    assert fingerprint(model) == before
    assert fingerprint(model.to("meta")) != before


def test_memory_is_bounded(monkeypatch):
    cache = CaptureCache()
    monkeypatch.setattr(capture_cache, "MAX_ENTRIES", 2)
    models = [torch.nn.ReLU() for _ in range(capture_cache.MAX_MODELS + 2)]
    for model in models:
        for key in range(3):
            cache.keep(model, (key,), object())
    assert len(cache._models) == capture_cache.MAX_MODELS
    assert all(len(entries) == 2 for _, _, entries in cache._models.values())
    cache.clear()
    assert not cache._models and CAPTURES is not cache


@pytest.fixture
def prepares(monkeypatch):
    """A list that grows by one at each capture profile() prepares (capture_cache.prepare)."""
    from pyfxprof.run import capture_cache
    calls, real = [], capture_cache.prepare
    monkeypatch.setattr(capture_cache, "prepare", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_profile_reuses_a_graph_capture_for_the_same_signature(prepares):
    from pyfxprof.run import runner
    model = Scaled().eval()

    def shapes(x):
        prof = runner.profile(model, (x,), runs=3, warmup=1, progress=False)
        return prof.nodes["output_shapes"].tolist()

    assert shapes(torch.randn(2, 4)) == ["[2, 4] float32"] * 2 and len(prepares) == 1
    assert shapes(torch.randn(2, 4)) == ["[2, 4] float32"] * 2 and len(prepares) == 1
    assert shapes(torch.randn(3, 4)) == ["[3, 4] float32"] * 2 and len(prepares) == 2
    model.double()
    assert shapes(torch.randn(3, 4).double()) == ["[3, 4] float64"] * 2
    assert len(prepares) == 3


class Branches(torch.nn.Module):
    """A data-dependent branch: torch.fx cannot trace it, Dynamo splits it into two graphs."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x):
        x = self.a(x)
        if x.sum() > 0:
            x = x * 2
        return self.b(x)


def test_a_graph_broken_capture_is_reused_by_the_next_block_until_the_model_changes():
    model, x = Branches().eval(), torch.randn(2, 4)
    with torch.no_grad():
        first, cached, _ = _block(model, x)
        assert not cached
        second, cached, p = _block(model, x)
        expected = model(x)
    assert cached and torch.equal(first, second) and torch.equal(second, expected)
    assert "(capture dynamo from the cache in " in p.summary()
    (prof,) = p.profiles
    assert prof.meta["graphs"] == 2 and prof.n_runs == 1 and (prof.samples > 0).all()
    model.train()
    with torch.no_grad():
        _, cached, p = _block(model, x)
    # captured again (its one call, of several graphs, made the capture: not timed)
    assert not cached and not p.profiles and sum(p._untimed.values()) == 1


def test_profile_reuses_a_graph_broken_capture_until_the_model_changes(prepares):
    from pyfxprof.run import runner
    model = Branches().eval()

    def profiled(x):
        prof = runner.profile(model, (x,), runs=3, warmup=1, progress=False)
        assert prof.meta["graphs"] == 2 and (prof.samples > 0).all()
        return prof

    x = torch.randn(2, 4)  # the same values: the branch Dynamo's code was made for
    first = profiled(x)
    second = profiled(x.clone())
    timed_alone = [c for c in first.nodes if c.startswith("alone_")]  # measured per profile
    assert len(prepares) == 1 and first.nodes.drop(columns=timed_alone).equals(
        second.nodes.drop(columns=timed_alone))
    model.double()
    assert profiled(x.double()).nodes["output_shapes"].iloc[0] == "[2, 4] float64"
    assert len(prepares) == 2


class _Settings:
    """A plain object of settings, as a model's config."""

    def __init__(self) -> None:
        self.act = "relu"


#: Places of the flag a forward reads to choose its op, with how to change it: each kind of
#: container and object a module keeps (nested, private, shared with another module).
PLACES = {
    "dict": (lambda m: setattr(m, "state", {"act": "relu"}),
             lambda m: m.state["act"], lambda m: m.state.update(act="sigmoid")),
    "nested dict": (lambda m: setattr(m, "state", {"a": {"b": ["relu"]}}),
                    lambda m: m.state["a"]["b"][0],
                    lambda m: m.state["a"]["b"].__setitem__(0, "sigmoid")),
    "list": (lambda m: setattr(m, "state", ["relu"]),
             lambda m: m.state[0], lambda m: m.state.__setitem__(0, "sigmoid")),
    "set": (lambda m: setattr(m, "state", {"relu"}),
            lambda m: "relu" if "relu" in m.state else "sigmoid", lambda m: m.state.clear()),
    "absent key": (lambda m: setattr(m, "state", {}),
                   lambda m: m.state.get("act", "relu"), lambda m: m.state.update(act="sigmoid")),
    "private": (lambda m: setattr(m, "_act", "relu"),
                lambda m: m._act, lambda m: setattr(m, "_act", "sigmoid")),
    "config object": (lambda m: setattr(m, "config", _Settings()),
                      lambda m: m.config.act, lambda m: setattr(m.config, "act", "sigmoid")),
    "submodule's dict": (lambda m: setattr(m.linear, "state", {"act": "relu"}),
                         lambda m: m.linear.state["act"],
                         lambda m: m.linear.state.update(act="sigmoid")),
}


class _Chooses(torch.nn.Module):
    """Its op is chosen by a flag read from `place` (PLACES)."""

    def __init__(self, place: str) -> None:
        super().__init__()
        self.linear, self.place = torch.nn.Linear(4, 4), place
        PLACES[place][0](self)

    def forward(self, x):
        act = PLACES[self.place][1](self)
        return torch.relu(self.linear(x)) if act == "relu" else torch.sigmoid(self.linear(x))


@pytest.mark.parametrize("capture", ["fx", "dynamo"])
@pytest.mark.parametrize("place", sorted(PLACES))
def test_a_profile_after_the_models_state_changed_times_the_program_it_runs_now(place, capture):
    # a traced graph bakes in what its forward read; state read from any container or
    # object of the model's modules is part of the capture's fingerprint
    import pyfxprof

    model, x = _Chooses(place).eval(), torch.randn(2, 4)
    options = dict(runs=2, warmup=0, progress=False, capture=capture, alone=False)
    first = pyfxprof.profile(model, (x,), **options)
    PLACES[place][2](model)
    second = pyfxprof.profile(model, (x,), **options)
    targets = [" ".join(p.nodes["target"].astype(str)) for p in (first, second)]
    assert "relu" in targets[0] and "sigmoid" not in targets[0]
    assert "sigmoid" in targets[1] and "relu" not in targets[1], targets


_SETTINGS = {"act": "relu"}  # a module-level setting a forward reads


class _ChoosesByGlobal(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        return torch.relu(y) if _SETTINGS["act"] == "relu" else torch.sigmoid(y)


def _closing_over(setting: list):
    class ChoosesByClosure(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = self.linear(x)
            return torch.relu(y) if setting[0] == "relu" else torch.sigmoid(y)
    return ChoosesByClosure()


@pytest.mark.parametrize("capture", ["fx", "dynamo"])
@pytest.mark.parametrize("scope", ["global", "closure"])
def test_state_a_forward_reads_outside_its_module_is_part_of_the_fingerprint(scope, capture):
    import pyfxprof

    setting = ["relu"]
    model = _ChoosesByGlobal() if scope == "global" else _closing_over(setting)
    options = dict(runs=2, warmup=0, progress=False, capture=capture, alone=False)
    try:
        first = pyfxprof.profile(model, (torch.randn(2, 4),), **options)
        _SETTINGS["act"] = setting[0] = "sigmoid"
        second = pyfxprof.profile(model, (torch.randn(2, 4),), **options)
    finally:
        _SETTINGS["act"] = "relu"
    targets = [" ".join(p.nodes["target"].astype(str)) for p in (first, second)]
    assert "relu" in targets[0] and "sigmoid" in targets[1] and "relu" not in targets[1]
