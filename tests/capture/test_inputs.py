"""Tests of pyfxprof.capture.inputs: binding calls to forwards, and profile() on such calls."""

import pytest
import torch

import pyfxprof
import inspect

from pyfxprof.capture.inputs import Binder, BoundInputs, bind_inputs, split_inputs
from pyfxprof.errors import PyfxprofError


class KwargsForward(torch.nn.Module):
    """The shape of every Hugging Face forward: named inputs, then **kwargs."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, mask=None, **kwargs):
        return self.linear(x)


class KeywordOnly(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x, *, scale):
        return self.linear(x) * scale


def test_empty_var_keyword_slot_is_never_passed_on():
    bound = bind_inputs(KwargsForward(), (), {"x": 1})
    assert bound == BoundInputs((1, None), {})


def test_positional_mixed_and_extra_keywords():
    model = KwargsForward()
    assert bind_inputs(model, (1, 2)).args == (1, 2)
    assert bind_inputs(model, (1,), {"mask": 2}) == BoundInputs((1, 2), {})
    assert bind_inputs(model, (1,), {"double": True}) == BoundInputs((1, None), {"double": True})


def test_keyword_only_and_var_positional():
    assert bind_inputs(KeywordOnly(), (1,), {"scale": 3}) == BoundInputs((1,), {"scale": 3})

    def varargs(a, *rest, flag=False):
        return a

    assert bind_inputs(varargs, (1, 2, 3)) == BoundInputs((1, 2, 3), {"flag": False})


def test_bound_inputs_call_the_forward_as_given():
    model, x = KwargsForward(), torch.ones(2, 4)
    bound = bind_inputs(model, (), {"x": x, "mask": x, "double": True})
    assert bound.args[1] is x and bound.kwargs == {"double": True}
    torch.testing.assert_close(bound.call(model), model(x))


def test_a_binder_binds_every_call_as_bind_inputs_does_and_reuses_its_plans():
    def forward(x, mask=None, *rest, scale=1, **kwargs): ...

    bind = Binder(inspect.signature(forward))
    calls = [((1,), {}), ((1, 2, 3, 4), {"flag": True}), ((), {"x": 1, "scale": 2}),
             ((1,), {"z": 3, "mask": 2, "y": 4}), ((1,), {"y": 4, "z": 3, "mask": 2})]
    for args, kwargs in calls * 2:  # the second round follows the plans of the first
        found, expected = bind(args, kwargs), bind_inputs(forward, args, kwargs)
        assert found == expected and list(found.kwargs) == list(expected.kwargs)
    assert len(bind._plans) == len(calls)
    x, mask = torch.ones(1), torch.zeros(1)
    bound = bind((x,), {"mask": mask})
    assert bound.args[0] is x and bound.args[1] is mask  # the call's own objects
    with pytest.raises(PyfxprofError, match="unexpected keyword|multiple values"):
        bind((1,), {"x": 2})
    assert bind((5,), {}) == BoundInputs((5, None), {"scale": 1})


def test_mismatch_is_one_line_quoting_the_signature():
    with pytest.raises(PyfxprofError, match=r"forward\(x, \*, scale\)") as error:
        bind_inputs(KeywordOnly(), (), {"x": 1})
    assert "\n" not in str(error.value)


def test_split_inputs_accepts_every_documented_form():
    bound = BoundInputs((1,), {"b": 2})
    assert split_inputs(bound) == ((1,), {"b": 2})
    assert split_inputs((1, 2)) == ((1, 2), {}) and split_inputs({"a": 1}) == ((), {"a": 1})


def test_profile_dict_inputs_of_a_kwargs_forward():
    x = torch.randn(2, 4)
    prof = pyfxprof.profile(KwargsForward(), {"x": x}, runs=2, warmup=0, progress=False)
    assert prof.meta["capture_mode"] == "fx" and prof.n_runs == 2
    assert prof.nodes.loc[0, "input_shapes"] == "([2, 4] float32)"


def test_profile_keywords_caught_by_kwargs_and_keyword_only_parameters():
    x = torch.randn(2, 4)
    prof = pyfxprof.profile(KwargsForward(), {"x": x, "double": True}, runs=2, warmup=0,
                            progress=False)
    assert prof.n_runs == 2 and prof.meta["capture_mode"] == "dynamo"
    assert prof.meta["capture_notes"][0].startswith("fx: keywords double reach forward only")
    prof = pyfxprof.profile(KeywordOnly(), {"x": x, "scale": 2.0}, runs=2, warmup=0,
                            progress=False)
    assert prof.n_runs == 2 and prof.meta["capture_mode"] == "fx"
