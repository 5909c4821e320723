"""Tests for pyfxprof.run.live_models: the profiled model held weakly, outside the Profile."""

import gc

import torch

import pyfxprof
from pyfxprof.run.capture_cache import CAPTURES
from pyfxprof.run.live_models import _LIVE, live_model, remember_model


def test_profile_finds_its_model_while_alive_and_never_keeps_it_alive():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    prof = pyfxprof.profile(model, (torch.randn(2, 4),), runs=3, warmup=1)
    assert live_model(prof) is model
    del model
    CAPTURES.clear()  # the process's capture cache holds its last models (run/capture_cache.py)
    gc.collect()
    assert live_model(prof) is None


def test_the_entry_leaves_with_its_profile_and_a_loaded_profile_has_none(tmp_path):
    model = torch.nn.Sequential(torch.nn.ReLU())
    prof = pyfxprof.profile(model, (torch.randn(2, 4),), runs=3, warmup=1)
    prof.save(tmp_path / "p.json")
    assert live_model(pyfxprof.load(tmp_path / "p.json")) is None
    key = id(prof)
    del prof
    gc.collect()
    assert key not in _LIVE


def test_an_object_without_weak_references_is_not_kept():
    class P:
        pass
    prof = P()
    assert remember_model(prof, object()) is prof and live_model(prof) is None
