"""profile()'s option groups (CaptureOptions, TimingOptions) beside its keywords, which keep
working; the groups' defaults are profile()'s."""

import dataclasses
import inspect

import pytest
import torch

import pyfxprof
from pyfxprof.errors import PyfxprofError
from pyfxprof.run.arguments import CaptureOptions, TimingOptions
from tests.models import Net, net_input


def test_the_groups_are_public_and_frozen():
    assert pyfxprof.CaptureOptions is CaptureOptions and pyfxprof.TimingOptions is TimingOptions
    with pytest.raises(dataclasses.FrozenInstanceError):
        CaptureOptions().capture = "fx"


def test_profile_keywords_default_to_the_groups_fields():
    parameters = inspect.signature(pyfxprof.profile).parameters
    for group in (CaptureOptions(), TimingOptions()):
        for field in dataclasses.fields(group):
            assert parameters[field.name].default == getattr(group, field.name), field.name
    assert parameters["capture_options"].default is None
    assert parameters["timing_options"].default is None


def test_a_group_does_what_its_keywords_do():
    model, x = Net(), net_input()
    by_keywords = pyfxprof.profile(model, (x,), 2, 0, "interpreter", capture="hooks",
                                   progress=False)
    by_groups = pyfxprof.profile(model, (x,), runs=2, warmup=0, progress=False,
                                 capture_options=CaptureOptions(capture="hooks"),
                                 timing_options=TimingOptions(mode="interpreter"))
    for prof in (by_keywords, by_groups):
        assert prof.meta["capture_mode"] == "hooks"
    assert list(by_keywords.nodes["name"]) == list(by_groups.nodes["name"])


def test_a_group_with_the_tracer_options():
    model = torch.nn.Sequential(Net())
    with pytest.warns(UserWarning, match="coarse capture"):  # Net whole: one node
        leaf = pyfxprof.profile(model, (net_input(),), runs=2, warmup=0, progress=False,
                                capture_options=CaptureOptions(leaf_modules=[Net]))
    assert list(leaf.nodes["module_type"][:1]) == ["Net"]


def test_a_group_and_a_keyword_of_the_same_option_are_refused_in_one_line():
    with pytest.raises(PyfxprofError, match="give capture either as a keyword or in "
                                            "CaptureOptions, not both") as error:
        pyfxprof.profile(Net(), (net_input(),), capture="fx",
                         capture_options=CaptureOptions(capture="hooks"))
    assert "\n" not in str(error.value)
    with pytest.raises(PyfxprofError, match="expected a pyfxprof.TimingOptions, got dict"):
        pyfxprof.profile(Net(), (net_input(),), timing_options={"mode": "interpreter"})


def test_a_group_mixes_with_the_other_groups_keywords():
    prof = pyfxprof.profile(Net(), (net_input(),), runs=2, warmup=0, progress=False,
                            mode="interpreter", capture_options=CaptureOptions(capture="fx"))
    assert (prof.meta["mode"], prof.meta["capture_mode"]) == ("interpreter", "fx")


def test_a_bad_value_in_a_group_is_the_keyword_s_error():
    with pytest.raises(PyfxprofError, match="mode must be one of"):
        pyfxprof.profile(Net(), (net_input(),), timing_options=TimingOptions(mode="fast"))
