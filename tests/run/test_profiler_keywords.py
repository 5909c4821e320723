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
    assert notes[0].filename == __file__  # the user's call, past profile()'s decorators
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


def test_the_profiler_loop_takes_the_same_keywords_and_notes_them_once(monkeypatch):
    """Profiler(model, record_shapes=True, ...) as torch.profiler.profile is called: the loop
    times as usual, profile_memory keeps its meaning (per-node bytes), and the note is said
    once for profile() and the loop together."""
    monkeypatch.setattr(profiler_keywords, "_said", [])
    model = Net()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pyfxprof.Profiler(model, record_shapes=True, with_stack=True, with_flops=True,
                               with_modules=True, profile_memory=True,
                               activities=[ProfilerActivity.CPU]) as p:
            for _ in range(3):
                model(net_input())
                p.step()
        pyfxprof.profile(Net(), (net_input(),), runs=1, warmup=0, progress=False,
                         with_stack=True)
    notes = [w for w in caught if "always records" in str(w.message)]
    assert len(notes) == 1 and notes[0].filename == __file__
    prof = p.profiles[-1]
    assert prof.n_runs >= 1 and prof.nodes["input_shapes"].str.len().gt(0).all()
    assert "cpu_alloc_bytes" in prof.nodes  # profile_memory: the allocator's bytes per node


def test_the_profiler_refuses_keywords_it_has_no_meaning_for_in_one_line():
    with pytest.raises(PyfxprofError, match=r"it has no \['experimental_config'\]") as error:
        pyfxprof.Profiler(Net(), experimental_config=object())
    assert "\n" not in str(error.value)
    with pytest.raises(PyfxprofError, match="list of torch.profiler.ProfilerActivity"):
        pyfxprof.Profiler(Net(), activities="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_profilers_activities_select_device_timing_on_cuda():
    model = Net().cuda()
    columns = {}
    for activities in ([ProfilerActivity.CPU], [ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        with pyfxprof.Profiler(model, activities=activities) as p:
            for _ in range(3):
                model(net_input().cuda())
                p.step()
        columns[len(activities)] = p.profiles[-1].meta.get("device_events")
    assert not columns[1] and columns[2]
