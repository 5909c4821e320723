"""The user's own call: the runs made inside it, its plain timing, failures, and the profile it
states."""

import math
import time

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.capture.inputs import BoundInputs
from pyfxprof.run.user_call import AroundRuns, UserCall, graph_runs_only, with_user_call
from tests.outside_profiles import graph_profile


class Decorated(torch.nn.Module):
    """A forward whose wrapper fills in an argument of its own (as transformers' do)."""

    def forward(self, x, flag=None, **kwargs):
        return x * 2 if kwargs.get("inner") else x


def _fills_in(forward):
    def wrapper(self, *args, **kwargs):
        return forward(self, *args, **kwargs, inner=True)
    wrapper.__wrapped__ = forward
    return wrapper


Decorated.forward = _fills_in(Decorated.forward)


def test_the_call_is_made_with_the_inputs_as_given():
    call = UserCall(Decorated(), {"x": torch.ones(2)}, "cpu")
    call.warm()
    call.time_once()
    assert call.error is None and len(call.walls_ns) == 1 and call.walls_ns[0] > 0
    assert torch.equal(call(), torch.full((2,), 2.0))


def test_the_inputs_are_copies_never_the_callers():
    x = torch.zeros(3)

    class AddsInPlace(torch.nn.Module):
        def forward(self, x):
            x += 1
            return x

    call = UserCall(AddsInPlace(), (x,), "cpu")
    call.warm()
    call.time_once()
    assert torch.equal(x, torch.zeros(3))


def test_a_failing_call_is_kept_as_a_line_and_stops_the_timing():
    class Fails(torch.nn.Module):
        def forward(self, x):
            raise ValueError("no eager path\nsecond line")

    call = UserCall(Fails(), (torch.ones(1),), "cpu")
    call.warm()
    call.time_once()
    assert call.walls_ns == [] and call.error == "ValueError: no eager path"
    prof = with_user_call(graph_profile(), call)
    assert prof.meta["call"] == {"error": "ValueError: no eager path"}
    assert "your call failed: ValueError: no eager path" in prof.table().splitlines()[1]


class Counted(torch.nn.Module):
    def __init__(self, fails=False):
        super().__init__()
        self.calls, self.fails = 0, fails

    def forward(self, x):
        self.calls += 1
        if self.fails:
            raise ValueError("no eager path")
        return x + 1


def test_the_breakdowns_profiled_calls_warm_the_call_else_one_plain_call_does():
    """Before the first timed call: the breakdown's PASSES profiled calls and no plain one;
    without a breakdown, WARMUP_CALLS plain calls. A failing call keeps its error either
    way."""
    from pyfxprof.run.python_breakdown import PASSES
    from pyfxprof.run.user_call import WARMUP_CALLS
    with_breakdown, without = Counted(), Counted()
    UserCall(with_breakdown, (torch.ones(2),), "cpu").prepare(lambda: None)
    UserCall(without, (torch.ones(2),), "cpu").prepare(None)
    assert (with_breakdown.calls, without.calls) == (PASSES, WARMUP_CALLS)
    call = UserCall(Counted(fails=True), (torch.ones(2),), "cpu")
    call.prepare(lambda: None)
    assert call.error == "ValueError: no eager path" and call.functions == []


def test_no_call_leaves_the_profile_as_it_is():
    prof = graph_profile()
    assert with_user_call(prof, None) is prof


def test_profile_makes_each_run_inside_a_call_and_times_the_plain_call_after():
    net = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())
    prof = pyfxprof.profile(net, (torch.randn(4, 16),), runs=7, warmup=1, progress=False)
    call = prof.meta["call"]
    # ceil(7 / 2) plain calls, each beside one more call around the graph (the level's pairs)
    assert call["runs"] == 4 and call["median_ns"] > 0 and call["graph_median_ns"] > 0
    assert call["per_run"] is True and call["around_median_ns"] > 0
    assert math.isfinite(call["level_ns"])
    assert "forward" not in net.__dict__  # the model's own forward again
    if prof.run_noise is not None:
        assert prof.run_noise.shape == (7, 4)


def test_without_warmup_runs_the_first_runs_are_still_made_inside_the_call():
    net = torch.nn.Sequential(torch.nn.Linear(4, 4))
    prof = pyfxprof.profile(net, (torch.ones(2, 4),), runs=5, warmup=0, progress=False)
    call = prof.meta["call"]
    assert call["per_run"] is True and call["runs"] == 3  # ceil(5 / 2): the level's pairs


class Hooked(torch.nn.Module):
    """A Linear whose forward hooks count the calls they see."""

    def __init__(self):
        super().__init__()
        self.fc, self.seen = torch.nn.Linear(4, 4), []
        self.register_forward_hook(lambda module, args, output: self.seen.append(output.shape))

    def forward(self, x):
        return self.fc(x)


def _graph_run(model, x):
    runs = []

    def run(args):
        runs.append(args)
        return model.fc(x)
    return runs, run


def test_a_run_is_made_inside_the_call_its_hooks_see_the_graphs_output():
    model, x = Hooked(), torch.ones(2, 4)
    runs, run = _graph_run(model, x)
    around = AroundRuns(model, BoundInputs((x,)), None, run)
    for _ in range(3):
        around.run(("args",))
    assert runs == [("args",)] * 3 and len(around.walls_ns) == 3 and around.failure is None
    assert model.seen == [torch.Size([2, 4])] * 3 and "forward" not in model.__dict__


def test_a_forward_set_on_the_instance_before_is_restored_and_a_nested_call_is_the_models():
    model, x = Hooked(), torch.ones(2, 4)
    own = model.forward
    model.forward = lambda x: own(x) * 2  # the user's own patch
    patched = model.__dict__["forward"]
    nested = []
    around = AroundRuns(model, BoundInputs((x,)), None,
                        lambda args: nested.append(model.forward is patched) or own(x))
    around.run(())
    assert nested == [True] and model.__dict__["forward"] is patched


class OwnCall(torch.nn.Module):
    def forward(self, x):
        return x

    def __call__(self, x):
        return x + 1


class RaisingHook(Hooked):
    def __init__(self):
        super().__init__()
        self.register_forward_hook(lambda *_: (_ for _ in ()).throw(KeyError("hook")))


@pytest.mark.parametrize("model,failure", [
    (OwnCall(), "your model's call does not reach its forward"),
    (RaisingHook(), "your call raised around the graph (KeyError: 'hook')")])
def test_a_call_that_cannot_hold_the_run_says_why_and_runs_the_graph_alone(model, failure):
    runs = []
    around = AroundRuns(model, BoundInputs((torch.ones(2, 4),)), None,
                        lambda args: runs.append(args) or torch.ones(2, 4))
    around.run(("first",))
    around.run(("second",))
    assert around.failure == failure and runs == [("first",), ("second",)]
    assert "forward" not in model.__dict__


def test_an_error_of_the_graphs_run_passes_through():
    def fails(args):
        raise ValueError("in the graph")
    model = Hooked()
    around = AroundRuns(model, BoundInputs((torch.ones(2, 4),)), None, fails)
    with pytest.raises(ValueError, match="in the graph"):
        around.run(())
    assert around.failure is None and "forward" not in model.__dict__


def test_calls_that_were_not_made_around_the_runs_keep_the_row_one_figure():
    call = UserCall(torch.nn.ReLU(), (torch.zeros(4),), "cpu")
    call.walls_ns = [5000] * 10
    prof = with_user_call(graph_profile(), call)
    assert prof.meta["call"]["per_run"] is False
    assert prof.meta["call"]["not_per_run"] == "the runs were not made inside your call"
    assert set(prof.samples[:, -1].tolist()) == {5000 - 900}
    assert any(line.startswith("per run: the runs were not made inside your call")
               for line in prof.table().splitlines())


def test_training_steps_are_not_measured_against_a_call():
    net = torch.nn.Sequential(torch.nn.Linear(4, 4))
    prof = pyfxprof.profile(net, (torch.randn(2, 4),), runs=2, warmup=0, backward=True,
                            progress=False)
    assert "call" not in prof.meta


def test_graph_runs_only_leaves_the_user_call_out():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    with graph_runs_only():
        alone = pyfxprof.profile(model, (torch.ones(2, 4),), runs=2, warmup=1, progress=False)
    both = pyfxprof.profile(model, (torch.ones(2, 4),), runs=2, warmup=1, progress=False)
    assert "call" not in alone.meta and "call" in both.meta
    assert alone.n_nodes == 2


def test_plain_calls_are_made_inside_plainly_and_without_a_breakdown_when_asked():
    """A compiled model's plain calls run Inductor's own wrappers (`plainly`: the executor's
    uninstrumented context), warmed by one plain call instead of the breakdown's."""
    from pyfxprof.run.user_call import WARMUP_CALLS
    model, inside = Counted(), []

    class Plainly:
        def __enter__(self):
            inside.append("in")

        def __exit__(self, *exc):
            inside.append("out")

    call = UserCall(model, (torch.ones(2),), "cpu", plainly=Plainly, breakdown=False)
    call.after_runs(lambda: None, 4)
    assert inside == ["in", "out"] and model.calls == WARMUP_CALLS + 4
    assert len(call.walls_ns) == 4 and call.functions == []


class Phased(torch.nn.Module):
    """A leaf whose every call takes ``extra_ns`` more while ``slow`` is set: a stretch of
    the host's speed that slows the plain calls and the calls around the graph alike."""

    slow, extra_ns = False, 3_000_000

    def forward(self, x):
        if Phased.slow:
            end = time.perf_counter_ns() + Phased.extra_ns
            while time.perf_counter_ns() < end:
                pass
        return x + 1


@pytest.mark.parametrize("runs", [6, 9])
def test_a_slow_stretch_after_the_runs_does_not_become_the_outside_row(monkeypatch, runs):
    # the plain calls time a block after the runs; a slow stretch starting then slows the
    # plain calls by 3 ms. Their level is taken beside calls around the graph made in the
    # same stretch, so the row keeps the call's own Python (~µs), not the stretch's 3 ms.
    net = torch.nn.Sequential(torch.nn.Linear(8, 8), Phased())
    after_runs = UserCall.after_runs

    def slowed(self, *args, **kwargs):
        Phased.slow = True
        try:
            after_runs(self, *args, **kwargs)
        finally:
            Phased.slow = False

    monkeypatch.setattr(UserCall, "after_runs", slowed)
    prof = pyfxprof.profile(net, (torch.randn(2, 8),), runs=runs, warmup=1, progress=False,
                            leaf_modules=[Phased])
    call = prof.meta["call"]
    assert call["plain_median_ns"] > Phased.extra_ns  # the plain calls were slowed
    assert call["around_median_ns"] < Phased.extra_ns / 4  # the runs were not
    assert abs(call["level_ns"]) < Phased.extra_ns / 4, call
    assert float(np.median(prof.run_totals)) < Phased.extra_ns / 4
    # the header's call is the runs' own (every figure from one block), the plain block named
    assert call["median_ns"] < Phased.extra_ns / 4 and 0.5 < call["rows_share"] < 2.0
    assert "your plain calls in their own block after the runs" in prof.table(width=None)
