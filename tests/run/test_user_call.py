"""The user's own call timed beside the graph: timing, failures, and the profile it states."""

import torch

import pyfxprof
from pyfxprof.run.user_call import UserCall, graph_runs_only, with_user_call
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


def test_profile_times_the_call_once_per_run_and_keeps_the_runs_noise_its_own():
    net = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())
    prof = pyfxprof.profile(net, (torch.randn(4, 16),), runs=7, warmup=1, progress=False)
    call = prof.meta["call"]
    assert call["runs"] == 7 and call["median_ns"] > 0 and call["graph_median_ns"] > 0
    assert call["interleaved"] is True
    if prof.run_noise is not None:
        assert prof.run_noise.shape == (7, 4)


def test_without_warmup_runs_the_call_is_timed_after_them():
    net = torch.nn.Sequential(torch.nn.Linear(4, 4))
    prof = pyfxprof.profile(net, (torch.ones(2, 4),), runs=5, warmup=0, progress=False)
    call = prof.meta["call"]
    assert call["interleaved"] is False and call["runs"] == 5
    assert "timed after the runs" in prof.table().splitlines()[1]


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
