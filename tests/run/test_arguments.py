"""The option groups (CaptureOptions, TimingOptions) that profile(), compare() and the Profiler
take, their fields also as keywords (option_groups routes every old keyword to its field),
and profile()'s signature: at most MAX_NAMED named parameters, the rest in the groups."""

import dataclasses
import inspect

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.profiler import ProfilerActivity

import pyfxprof
from pyfxprof.errors import ArgumentError, PyfxprofError
from pyfxprof.loop.profiler import _PROFILE_ONLY
from pyfxprof.run import compare as compare_module
from pyfxprof.run import runner
from pyfxprof.run.arguments import (CAPTURE, FIELDS, TIMING, CaptureOptions, TimingOptions,
                                    option_groups)
from tests.models import Net, net_input

#: profile() takes at most this many named parameters (issue 47); the rest are option groups.
MAX_NAMED = 12

#: Every option keyword profile() took before the groups (a contract: each must keep working),
#: its group and a value other than the default.
OLD_KEYWORDS = [
    ("capture", "capture", "fx"), ("granularity", "capture", "aten"),
    ("leaf_modules", "capture", (Net,)), ("autowrap_functions", "capture", (len,)),
    ("concrete_args", "capture", {"flag": True}), ("library_frames", "capture", True),
    ("profile_memory", "capture", True), ("mode", "timing", "interpreter"),
    ("device", "timing", "cpu"), ("device_events", "timing", False),
    ("nvtx", "timing", True), ("alone", "timing", False),
]
#: profile()'s named parameters (not option fields) with a value other than the default:
#: each reaches the Arguments field of its name.
NAMED = {"runs": 7, "warmup": 3, "grad": True, "name": "net", "progress": False,
         "compile": None, "backward": True, "loss_fn": len}


class _Reached(Exception):
    """Raised where a test stops a call once its arguments are known."""


def _arguments_of(monkeypatch, *args, **kwargs):
    """The Arguments profile(*args, **kwargs) checks (the call stops there)."""
    seen = []

    def stop(given):
        seen.append(given)
        raise _Reached
    monkeypatch.setattr(runner, "checked", stop)
    with pytest.raises(_Reached):
        pyfxprof.profile(*args, **kwargs)
    return seen[0]


def test_profile_has_at_most_twelve_named_parameters():
    parameters = inspect.signature(pyfxprof.profile).parameters.values()
    named = [p.name for p in parameters if p.kind is not p.VAR_KEYWORD]
    assert len(named) <= MAX_NAMED, named
    assert [p.kind for p in parameters][-1] is inspect.Parameter.VAR_KEYWORD


def test_the_table_is_every_field_of_the_groups():
    """A field added to a group is added to OLD_KEYWORDS (and so to the tests below)."""
    assert sorted(name for name, _, _ in OLD_KEYWORDS) == sorted(FIELDS)
    for name, group, value in OLD_KEYWORDS:
        default = getattr(CAPTURE if group == "capture" else TIMING, name)
        assert value != default, name


@pytest.mark.parametrize("name, group, value", OLD_KEYWORDS, ids=[k for k, _, _ in OLD_KEYWORDS])
def test_each_old_keyword_reaches_its_field(monkeypatch, name, group, value):
    given = _arguments_of(monkeypatch, Net(), (net_input(),), **{name: value})
    grouped = getattr(given, group)
    assert getattr(grouped, name) == value
    others = [f.name for f in dataclasses.fields(grouped) if f.name != name]
    default = CAPTURE if group == "capture" else TIMING
    assert all(getattr(grouped, f) == getattr(default, f) for f in others)
    untouched = given.timing if group == "capture" else given.capture
    assert untouched == (TIMING if group == "capture" else CAPTURE)


@pytest.mark.parametrize("name", sorted(NAMED))
def test_each_named_parameter_reaches_its_argument(monkeypatch, name):
    given = _arguments_of(monkeypatch, Net(), (net_input(),), **{name: NAMED[name]})
    assert getattr(given, name) == NAMED[name]
    assert (given.capture, given.timing) == (CAPTURE, TIMING)


@pytest.mark.parametrize("keywords, device_events", [
    ({"activities": [ProfilerActivity.CPU]}, False),
    ({"activities": [ProfilerActivity.CPU, ProfilerActivity.CUDA]}, True),
    ({"record_shapes": True, "with_stack": True, "with_flops": True, "with_modules": True},
     None),
])
def test_torch_profilers_keywords_reach_the_timing_group(monkeypatch, keywords, device_events):
    monkeypatch.setattr("pyfxprof.run.profiler_keywords._said", [True])  # no note
    given = _arguments_of(monkeypatch, Net(), (net_input(),), **keywords)
    assert given.timing == dataclasses.replace(TIMING, device_events=device_events)
    assert given.capture == CAPTURE


@settings(max_examples=60, deadline=None)
@given(st.sets(st.sampled_from(range(len(OLD_KEYWORDS)))))
def test_keywords_and_groups_are_the_same_options(chosen):
    picked = [OLD_KEYWORDS[k] for k in sorted(chosen)]
    keywords = {name: value for name, _, value in picked}
    by_groups = option_groups({}, CaptureOptions(**{n: v for n, g, v in picked if g == "capture"}),
                              TimingOptions(**{n: v for n, g, v in picked if g == "timing"}))
    assert option_groups(keywords) == by_groups


def test_the_groups_are_public_and_frozen():
    assert pyfxprof.CaptureOptions is CaptureOptions and pyfxprof.TimingOptions is TimingOptions
    with pytest.raises(dataclasses.FrozenInstanceError):
        CaptureOptions().capture = "fx"


def test_profile_compare_and_the_profiler_take_the_same_groups():
    """The same types, with the same defaults (the groups' defaults, which the CLI reads)."""
    takers = (pyfxprof.profile, pyfxprof.compare, pyfxprof.Profiler.__init__)
    for taker in takers:
        parameters = inspect.signature(taker).parameters
        assert parameters["capture_options"].default is CAPTURE, taker
        assert parameters["timing_options"].default is TIMING, taker
        assert [p.kind for p in parameters.values()][-1] is inspect.Parameter.VAR_KEYWORD
        assert parameters["capture_options"].annotation == "CaptureOptions | None"
        assert parameters["timing_options"].annotation == "TimingOptions | None"
        names = inspect.unwrap(taker).__globals__  # the names resolve to the same classes
        assert (names["CaptureOptions"], names["TimingOptions"]) == (CaptureOptions,
                                                                     TimingOptions)


def test_the_same_option_objects_reach_each_taker(monkeypatch):
    capture, timing = CaptureOptions(leaf_modules=(Net,)), TimingOptions(mode="interpreter")
    given = _arguments_of(monkeypatch, Net(), (net_input(),), capture_options=capture,
                          timing_options=timing)
    assert given.capture is capture and given.timing is timing
    passed = []

    def stop(*args, **kwargs):
        passed.append(kwargs)
        raise _Reached
    monkeypatch.setattr(compare_module, "profile", stop)
    with pytest.raises(_Reached):
        pyfxprof.compare(Net(), Net(), (net_input(),), capture_options=capture,
                         timing_options=timing, progress=False)
    assert passed[0]["capture_options"] is capture and passed[0]["timing_options"] is timing
    p = pyfxprof.Profiler(Net(), capture_options=capture)
    assert p._capture is capture and p._timing is TIMING


def test_compare_routes_keywords_into_the_groups(monkeypatch):
    passed = []

    def stop(*args, **kwargs):
        passed.append(kwargs)
        raise _Reached
    monkeypatch.setattr(compare_module, "profile", stop)
    with pytest.raises(_Reached):
        pyfxprof.compare(Net(), Net(), (net_input(),), mode="interpreter", capture="fx",
                         grad=True, progress=False)
    assert passed[0]["timing_options"] == TimingOptions(mode="interpreter")
    assert passed[0]["capture_options"] == CaptureOptions(capture="fx")
    assert passed[0]["grad"] is True and "mode" not in passed[0]


def test_the_profiler_measures_what_a_group_asks_as_its_keyword_does():
    model = Net()
    found = {}
    for label, options in (("keyword", {"profile_memory": True}),
                           ("group", {"capture_options": CaptureOptions(profile_memory=True)})):
        with pyfxprof.Profiler(model, **options) as p:
            model(net_input())
        found[label] = "cpu_alloc_bytes" in p.profiles[-1].nodes
    assert found == {"keyword": True, "group": True}


@pytest.mark.parametrize("name", _PROFILE_ONLY)
def test_the_profiler_refuses_options_it_has_no_choice_of_in_one_line(name):
    value = next(v for n, _, v in OLD_KEYWORDS if n == name)
    with pytest.raises(ArgumentError, match=f"leave {name} at its default") as error:
        pyfxprof.Profiler(Net(), **{name: value})
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("options", [{"alone": False}, {"alone": ["fc"]},
                                     {"timing_options": TimingOptions(alone=False)}])
def test_the_profiler_refuses_alone_in_one_line_pointing_to_replay(options):
    with pytest.raises(ArgumentError, match=r"no node alone.*replay\(node\)") as error:
        pyfxprof.Profiler(Net(), **options)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("taker", ["pyfxprof.profile()", "pyfxprof.compare()",
                                   "pyfxprof.Profiler"])
def test_an_unknown_keyword_is_one_line_naming_the_valid_ones(taker):
    calls = {"pyfxprof.profile()": lambda: pyfxprof.profile(Net(), (net_input(),), modes=1),
             "pyfxprof.compare()": lambda: pyfxprof.compare(Net(), Net(), (net_input(),),
                                                           modes=1),
             "pyfxprof.Profiler": lambda: pyfxprof.Profiler(Net(), modes=1)}
    with pytest.raises(ArgumentError) as error:
        calls[taker]()
    message = str(error.value)
    assert message.startswith(taker) and "it has no ['modes']" in message
    assert all(name in message for name in [*FIELDS, "activities"]) and "\n" not in message


def test_a_group_does_what_its_keywords_do():
    model, x = Net(), net_input()
    by_keywords = pyfxprof.profile(model, (x,), 2, 0, mode="interpreter", capture="hooks",
                                   progress=False)
    by_groups = pyfxprof.profile(model, (x,), runs=2, warmup=0, progress=False,
                                 capture_options=CaptureOptions(capture="hooks"),
                                 timing_options=TimingOptions(mode="interpreter"))
    for prof in (by_keywords, by_groups):
        assert prof.meta["capture_mode"] == "hooks"  # (its mode: hooks, whatever was asked)
    assert list(by_keywords.nodes["name"]) == list(by_groups.nodes["name"])


def test_a_group_with_the_tracer_options():
    model = torch.nn.Sequential(Net())
    with pytest.warns(UserWarning, match="coarse capture"):  # Net whole: one node
        leaf = pyfxprof.profile(model, (net_input(),), runs=2, warmup=0, progress=False,
                                capture_options=CaptureOptions(leaf_modules=[Net]))
    assert list(leaf.nodes["module_type"][:1]) == ["Net"]


def test_a_group_and_a_keyword_that_disagree_are_refused_in_one_line():
    with pytest.raises(PyfxprofError, match="give capture either as a keyword or in "
                                            "CaptureOptions, not both") as error:
        pyfxprof.profile(Net(), (net_input(),), capture="fx",
                         capture_options=CaptureOptions(capture="hooks"))
    assert "\n" not in str(error.value)
    with pytest.raises(PyfxprofError, match="expected a pyfxprof.TimingOptions, got dict"):
        pyfxprof.profile(Net(), (net_input(),), timing_options={"mode": "interpreter"})


def test_a_keyword_that_agrees_with_its_group_or_keeps_the_default_is_taken():
    group = CaptureOptions(capture="hooks")
    assert option_groups({"capture": "hooks"}, group)[0] is group
    assert option_groups({"capture": "auto"}, group)[0] is group  # as before the groups


def test_a_group_mixes_with_the_other_groups_keywords():
    prof = pyfxprof.profile(Net(), (net_input(),), runs=2, warmup=0, progress=False,
                            mode="interpreter", capture_options=CaptureOptions(capture="fx"))
    assert (prof.meta["mode"], prof.meta["capture_mode"]) == ("interpreter", "fx")


def test_a_bad_value_in_a_group_is_the_keyword_s_error():
    with pytest.raises(PyfxprofError, match="mode must be one of"):
        pyfxprof.profile(Net(), (net_input(),), timing_options=TimingOptions(mode="fast"))
