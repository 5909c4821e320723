"""torch.profiler's keywords accepted by profile() (run/profiler_keywords.py)."""

import warnings

import pytest
import torch
from torch.profiler import ProfilerActivity

import pyfxprof
from pyfxprof.errors import PyfxprofError
from pyfxprof.run import profiler_keywords
from pyfxprof.run.profiler_keywords import torch_profiler_keywords
from tests.models import Net, net_input


def test_the_recipes_keywords_profile_as_usual_and_are_noted_once_per_process(monkeypatch):
    monkeypatch.setattr(profiler_keywords, "_said", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prof = pyfxprof.profile(Net(), (net_input(),), runs=2, warmup=0, progress=False,
                                record_shapes=True, with_stack=True, with_flops=True,
                                with_modules=True, profile_memory=False,
                                activities=[ProfilerActivity.CPU])
        pyfxprof.profile(Net(), (net_input(),), runs=1, warmup=0, progress=False,
                         record_shapes=True)
    notes = [w for w in caught if "always records" in str(w.message)]
    assert len(notes) == 1 and "record_shapes, with_stack" in str(notes[0].message)
    assert prof.n_runs == 2 and prof.nodes["input_shapes"].str.len().gt(0).all()
    assert prof.meta["device_events"] is None  # CPU only: host timing


def test_activities_select_host_or_device_timing():
    assert torch_profiler_keywords({"activities": [ProfilerActivity.CPU]}, None) is False
    both = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    assert torch_profiler_keywords({"activities": both}, None) is True
    assert torch_profiler_keywords({}, None) is None


@pytest.mark.parametrize("options, message", [
    ({"activities": "cpu"}, "list of torch.profiler.ProfilerActivity"),
    ({"activities": [ProfilerActivity.CPU, "xpu"]}, "no \\['xpu'\\] activity"),
    ({"record_shapes": "yes"}, "record_shapes must be True or False"),
])
def test_bad_keywords_are_one_line(options, message):
    with pytest.raises(PyfxprofError, match=message) as error:
        torch_profiler_keywords(options, None)
    assert "\n" not in str(error.value)


def test_activities_and_device_events_must_agree():
    with pytest.raises(PyfxprofError, match="give one of them"):
        torch_profiler_keywords({"activities": [ProfilerActivity.CUDA]}, False)
    with pytest.raises(PyfxprofError, match="give one of them"):
        pyfxprof.profile(Net(), (net_input(),), runs=1, device_events=True,
                         activities=[ProfilerActivity.CPU])
