"""Tests of pyfxprof.views.speedscope: the file against a JSON schema of speedscope's file format
(written from its spec, src/lib/file-format-spec.ts), frame indices, event nesting, and the
hand-computed timeline of the median run and weights of the sampled profile."""

import gzip
import json

import jsonschema
import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.data.profile import Profile
from pyfxprof.errors import PyfxprofError
from pyfxprof.views.speedscope import SCHEMA, median_run, speedscope_document
from tests.toy_profiles import toy_nodes

# The speedscope file format (FileFormat.File): what speedscope requires of a file.
_UNITS = ["none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"]
_COMMON = {"name": {"type": "string"}, "unit": {"enum": _UNITS},
           "startValue": {"type": "number"}, "endValue": {"type": "number"}}
_INDEX = {"type": "integer", "minimum": 0}
FILE_SCHEMA = {
    "type": "object",
    "required": ["$schema", "shared", "profiles"],
    "properties": {
        "$schema": {"const": SCHEMA},
        "shared": {"type": "object", "required": ["frames"], "properties": {"frames": {
            "type": "array", "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "file": {"type": "string"},
                "line": {"type": "number"}, "col": {"type": "number"}}}}}},
        "profiles": {"type": "array", "items": {"oneOf": [
            {"type": "object", "required": ["type", "name", "unit", "startValue", "endValue",
                                            "events"],
             "properties": dict(_COMMON, type={"const": "evented"}, events={
                 "type": "array", "items": {
                     "type": "object", "required": ["type", "at", "frame"],
                     "properties": {"type": {"enum": ["O", "C"]}, "at": {"type": "number"},
                                    "frame": _INDEX}}})},
            {"type": "object", "required": ["type", "name", "unit", "startValue", "endValue",
                                            "samples", "weights"],
             "properties": dict(_COMMON, type={"const": "sampled"},
                                samples={"type": "array",
                                         "items": {"type": "array", "items": _INDEX}},
                                weights={"type": "array", "items": {"type": "number"}})}]}},
        "name": {"type": "string"}, "activeProfileIndex": {"type": "number"},
        "exporter": {"type": "string"},
    },
}

# Four runs of the toy graph (conv1, layer1.0.conv1, layer1.0.relu, add); run totals
# 3340, 3642, 6239, 3440: sorted r0, r3, r1, r2, the (lower) median run is run 3.
SAMPLES = np.array([[1000, 2000, 300, 40], [1200, 2100, 301, 41],
                    [900, 5000, 299, 40], [1100, 2000, 300, 40]], dtype=np.int64)
FRAMES = ["conv1", "layer1", "layer1.0", "layer1.0.conv1", "layer1.0.relu", "add"]


def toy_profile(meta=None, device=False):
    return Profile(toy_nodes(), SAMPLES, SAMPLES.sum(axis=1), meta or {"model": "toy"},
                   device_samples=SAMPLES // 2 if device else None)


def check_file(document: dict) -> None:
    """Schema-valid, every frame index valid, events in time order and properly nested."""
    jsonschema.validate(document, FILE_SCHEMA)
    frames = len(document["shared"]["frames"])
    for profile in document["profiles"]:
        assert profile["startValue"] <= profile["endValue"]
        if profile["type"] == "sampled":
            assert len(profile["samples"]) == len(profile["weights"])
            assert all(0 <= f < frames for stack in profile["samples"] for f in stack)
            continue
        stack, last = [], profile["startValue"]
        for event in profile["events"]:
            assert 0 <= event["frame"] < frames and last <= event["at"] <= profile["endValue"]
            last = event["at"]
            if event["type"] == "O":
                stack.append(event["frame"])
            else:
                assert stack.pop() == event["frame"]
        assert stack == []


def events(profile: dict) -> list[tuple]:
    return [(e["type"], e["frame"], e["at"]) for e in profile["events"]]


def test_the_median_runs_timeline_and_the_per_node_medians_hand_computed():
    document = speedscope_document(toy_profile())
    check_file(document)
    assert [f["name"] for f in document["shared"]["frames"]] == FRAMES
    evented, sampled = document["profiles"]
    assert evented["name"] == "host, run 3 (median run)" and evented["unit"] == "nanoseconds"
    assert events(evented) == [  # run 3: 1100, 2000, 300, 40 end to end
        ("O", 0, 0), ("C", 0, 1100),
        ("O", 1, 1100), ("O", 2, 1100), ("O", 3, 1100), ("C", 3, 3100),
        ("O", 4, 3100), ("C", 4, 3400), ("C", 2, 3400), ("C", 1, 3400),
        ("O", 5, 3400), ("C", 5, 3440)]
    assert (evented["startValue"], evented["endValue"]) == (0, 3440)
    assert sampled["name"] == "per-node median over 4 runs"
    assert sampled["samples"] == [[0], [1, 2, 3], [1, 2, 4], [5]]
    assert sampled["weights"] == [1050, 2050, 300, 40]
    assert document["activeProfileIndex"] == 0 and document["name"] == "toy"


def test_the_mark_cost_separates_the_nodes_and_the_modules_close_at_their_last_nodes_end():
    document = speedscope_document(toy_profile({"overhead_ns": 10}), run=0, metric="max")
    check_file(document)
    evented, sampled = document["profiles"]
    assert evented["name"] == "host, run 0 (chosen run)"
    assert events(evented)[2:] == [  # run 0: 1000, 2000, 300, 40 with 10 ns per boundary
        ("O", 1, 1010), ("O", 2, 1010), ("O", 3, 1010), ("C", 3, 3010),
        ("O", 4, 3020), ("C", 4, 3320), ("C", 2, 3320), ("C", 1, 3320),
        ("O", 5, 3330), ("C", 5, 3370)]
    assert sampled["weights"] == [1200, 5000, 301, 41]


def test_a_device_track_is_a_profile_of_its_own():
    document = speedscope_document(toy_profile(device=True))
    check_file(document)
    assert [p["name"] for p in document["profiles"]] == [
        "host, run 3 (median run)", "device, run 3", "per-node median over 4 runs"]
    assert document["profiles"][1]["endValue"] == int((SAMPLES[3] // 2).sum())


def test_the_median_run_is_the_lower_median_of_the_run_totals():
    assert median_run(toy_profile()) == 3
    odd = Profile(toy_nodes(), SAMPLES[:3], SAMPLES[:3].sum(axis=1))
    assert median_run(odd) == 1  # totals 3340, 3642, 6239


def test_bad_runs_and_empty_profiles_are_one_line_errors():
    with pytest.raises(PyfxprofError, match=r"run must be a run index in 0\.\.3, got 4"):
        speedscope_document(toy_profile(), run=4)
    empty = Profile(toy_nodes(), SAMPLES[:0], SAMPLES[:0].sum(axis=1))
    with pytest.raises(PyfxprofError, match="no runs"):
        speedscope_document(empty)


def test_a_real_profile_through_the_profile_method_and_gzip(tmp_path):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Sequential(
        torch.nn.ReLU(), torch.nn.Flatten()), torch.nn.Linear(4 * 6 * 6, 2))
    prof = pyfxprof.profile(model, (torch.randn(2, 3, 8, 8),), runs=5, warmup=1,
                            progress=False)
    prof.export_speedscope(tmp_path / "p.speedscope.json.gz")
    with gzip.open(tmp_path / "p.speedscope.json.gz", "rt") as stream:
        document = json.load(stream)
    check_file(document)
    evented = document["profiles"][0]
    opened = [e for e in evented["events"] if e["type"] == "O"]
    assert len(opened) == prof.n_nodes + 1  # each node, and the container "1" around two
    assert document["exporter"].startswith("pyfxprof@")
    run = median_run(prof)
    assert evented["endValue"] >= prof.samples[run].sum()
