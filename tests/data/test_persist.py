import base64
import gzip
import json
import pickle

import numpy as np
import pandas as pd
import pytest

from pyfxprof.errors import PyfxprofError
from pyfxprof.data import persist
from pyfxprof.data.persist import decode_value, encode_value, load_profile, save_profile
from pyfxprof.data.profile import Profile
from tests.toy_profiles import toy_nodes


def make_profile(runs=6, device=False, run_starts=False, extra=True, seed=0):
    rng = np.random.default_rng(seed)
    nodes = toy_nodes()
    if extra:
        nodes["input_shapes"] = ["[1, 3, 8, 8]", "[1, 4, 8, 8]", "[1, 4, 8, 8]", None]
        nodes["flops"] = np.array([1000, 2000, 0, 64], dtype=np.int64)
        nodes["out_bytes"] = np.array([256, 256, 256, 256], dtype=np.int64)
        nodes["inputs"] = [("x",), ("conv1",), ("layer1_0_conv1",), ("layer1_0_relu", "x")]
        nodes["intensity"] = [0.5, float("nan"), 1.25, float("inf")]
        nodes["note"] = pd.Series([None, float("nan"), "fused", 3], dtype=object)
        nodes["shapes"] = pd.Series([[(1, 3)], [(1, 4), (4,)], [], [()]], dtype=object)
    samples = rng.integers(100, 100_000, size=(runs, 4))
    coverage = float(np.median(samples.sum(axis=1) / (samples.sum(axis=1) + 500))) if runs else None
    meta = {"model": "toy", "device": "cpu", "runs": runs, "overhead_ns": 52.25,
            "clock": {"name": "tsc", "resolution_ns": 0.4, "tsc_hz": 2_900_000_000},
            "versions": {"torch": "2.3.0"}, "coverage": coverage, "limits": (1, float("inf")),
            "tricky": {"$tuple": "not a tag"}}
    return Profile(nodes, samples, samples.sum(axis=1) + 500, meta,
                   device_samples=samples // 2 if device else None,
                   run_starts=np.arange(runs) * 10**9 + 123 if run_starts else None)


@pytest.mark.parametrize("name", ["p.json", "p.json.gz"])
@pytest.mark.parametrize("options", [{}, {"device": True, "run_starts": True}, {"extra": False},
                                     {"runs": 0}, {"runs": 1, "device": True}])
def test_round_trip_is_equal(tmp_path, name, options):
    original = make_profile(**options)
    save_profile(original, tmp_path / name)
    loaded = load_profile(tmp_path / name)
    assert loaded == original
    assert loaded.nodes["module_stack"].tolist()[1] == ("layer1", "layer1.0", "layer1.0.conv1")
    assert list(tmp_path.iterdir()) == [tmp_path / name]  # no partial file left behind


def test_round_trip_keeps_dtypes_and_cells(tmp_path):
    original = make_profile(device=True, run_starts=True)
    original.save(tmp_path / "p.json")
    loaded = load_profile(str(tmp_path / "p.json"))
    assert loaded.nodes["flops"].dtype == np.int64
    assert loaded.nodes["inputs"].tolist()[3] == ("layer1_0_relu", "x")
    assert loaded.nodes["shapes"].tolist()[1] == [(1, 4), (4,)]
    assert np.isnan(loaded.nodes["note"][1]) and loaded.nodes["note"][0] is None
    assert loaded.meta["limits"] == (1, float("inf"))
    assert loaded.meta["tricky"] == {"$tuple": "not a tag"}
    assert loaded.run_starts.tolist() == original.run_starts.tolist()
    assert loaded.samples.flags.writeable


def test_file_is_versioned_json_with_packed_arrays(tmp_path):
    make_profile(runs=50).save(tmp_path / "p.json")
    doc = json.loads((tmp_path / "p.json").read_text())
    assert (doc["format"], doc["version"], doc["n_runs"], doc["n_nodes"]) == (
        "pyfxprof-profile", persist.VERSION, 50, 4)
    assert doc["samples"]["dtype"] == "<i8" and doc["samples"]["shape"] == [50, 4]
    assert isinstance(doc["samples"]["data"], str)
    assert doc["device_samples"] is None and doc["run_starts"] is None
    assert [c["name"] for c in doc["nodes"]][:3] == ["index", "name", "op"]


def test_gz_name_writes_gzip(tmp_path):
    make_profile().save(tmp_path / "p.json.gz")
    raw = (tmp_path / "p.json.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    assert json.loads(gzip.decompress(raw))["format"] == "pyfxprof-profile"


def test_gzip_detected_by_content_whatever_the_name(tmp_path):
    make_profile().save(tmp_path / "p.json.gz")
    (tmp_path / "p.json.gz").rename(tmp_path / "renamed.json")
    assert load_profile(tmp_path / "renamed.json") == make_profile()


def test_never_pickles(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("pickle used")

    for name in ("dumps", "loads", "dump", "load"):
        monkeypatch.setattr(pickle, name, refuse)
    original = make_profile(device=True, run_starts=True)
    save_profile(original, tmp_path / "p.json")
    assert load_profile(tmp_path / "p.json") == original


def test_encode_decode_value_tags():
    value = {"t": (1, ("a",)), "nan": float("nan"), "l": [1.0, None], "$float": 1,
             "one": {"$na": 2}, "arr": np.arange(3, dtype=np.int32)}
    encoded = encode_value(value)
    json.dumps(encoded, allow_nan=False)
    decoded = decode_value(json.loads(json.dumps(encoded)))
    assert decoded["t"] == (1, ("a",)) and np.isnan(decoded["nan"]) and decoded["l"] == [1.0, None]
    assert decoded["$float"] == 1 and decoded["one"] == {"$na": 2}
    assert decoded["arr"].dtype == np.int32 and decoded["arr"].tolist() == [0, 1, 2]
    assert decode_value({"$na": None}) is pd.NA


def write_json(path, doc):
    path.write_text(json.dumps(doc))
    return path


def saved_doc(tmp_path):
    make_profile().save(tmp_path / "good.json")
    return json.loads((tmp_path / "good.json").read_text())


def expect_refusal(path, reason):
    with pytest.raises(PyfxprofError) as info:
        load_profile(path)
    message = str(info.value)
    assert message.startswith(f"cannot load profile {path}: "), message
    assert reason in message, message


def test_refuses_missing_file(tmp_path):
    expect_refusal(tmp_path / "nope.json", "no such file")


def test_refuses_truncated_gzip(tmp_path):
    make_profile(runs=200).save(tmp_path / "p.json.gz")
    raw = (tmp_path / "p.json.gz").read_bytes()
    (tmp_path / "p.json.gz").write_bytes(raw[: len(raw) // 2])
    expect_refusal(tmp_path / "p.json.gz", "corrupt or truncated gzip")


def test_refuses_corrupt_gzip(tmp_path):
    path = tmp_path / "p.json.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(200)))
    expect_refusal(path, "corrupt or truncated gzip")


def test_refuses_truncated_plain_json(tmp_path):
    make_profile().save(tmp_path / "p.json")
    text = (tmp_path / "p.json").read_text()
    (tmp_path / "p.json").write_text(text[:-40])
    expect_refusal(tmp_path / "p.json", "invalid JSON")


def test_refuses_binary_garbage(tmp_path):
    path = tmp_path / "p.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    expect_refusal(path, "not UTF-8")


@pytest.mark.parametrize("doc", [{"traceEvents": []}, [1, 2], {"format": "other", "version": 1}])
def test_refuses_foreign_json(tmp_path, doc):
    expect_refusal(write_json(tmp_path / "f.json", doc), "not a pyfxprof profile")


def test_refuses_newer_version(tmp_path):
    doc = saved_doc(tmp_path)
    doc["version"] = persist.VERSION + 1
    expect_refusal(write_json(tmp_path / "new.json", doc),
                   f"written by a newer pyfxprof (format version {persist.VERSION + 1} > "
                   f"{persist.VERSION}); upgrade pyfxprof")


@pytest.mark.parametrize("version", [0, "1", None, True])
def test_refuses_bad_version(tmp_path, version):
    doc = saved_doc(tmp_path)
    doc["version"] = version
    expect_refusal(write_json(tmp_path / "v.json", doc), "unsupported format version")


def test_refuses_missing_field(tmp_path):
    doc = saved_doc(tmp_path)
    del doc["samples"]
    expect_refusal(write_json(tmp_path / "m.json", doc), "missing fields ['samples']")


def mutate(doc, key):
    """Apply one named corruption to a saved document."""
    if key == "shape":
        doc["samples"]["shape"] = [doc["n_runs"] + 1, doc["n_nodes"]]
    elif key == "run_totals":
        doc["run_totals"] = {"dtype": "<i8", "shape": [1], "data": "AQAAAAAAAAA="}
    elif key == "n_runs":
        doc["n_runs"] += 1
    elif key == "column_length":
        doc["nodes"][1]["values"].append("extra")
    elif key == "object_dtype":
        doc["samples"]["dtype"] = "|O"
    elif key == "base64":
        doc["samples"]["data"] = "@@not base64@@"
    elif key == "nodes_vs_samples":
        doc["samples"] = {"dtype": "<i8", "shape": [doc["n_runs"], 1],
                          "data": base64.b64encode(bytes(8 * doc["n_runs"])).decode()}
    elif key == "bad_tag":
        doc["meta"]["limits"] = {"$tuple": 5}


@pytest.mark.parametrize("key, reason", [
    ("shape", "bytes do not fit shape"),
    ("run_totals", "run_totals has shape [1], expected [6]"),
    ("n_runs", "n_runs is 7 but samples has 6 runs"),
    ("column_length", "nodes column 'name' has 5 rows, expected 4"),
    ("object_dtype", "dtype '|O' is not a plain integer or float dtype"),
    ("base64", "bytes do not fit shape"),
    ("nodes_vs_samples", "samples has shape [6, 1], expected [6, 4]"),
    ("bad_tag", "bad $tuple value"),
])
def test_refuses_inconsistent_arrays(tmp_path, key, reason):
    doc = saved_doc(tmp_path)
    mutate(doc, key)
    expect_refusal(write_json(tmp_path / "bad.json", doc), reason)


def test_save_to_missing_directory_is_a_clear_error(tmp_path):
    path = tmp_path / "no" / "such" / "dir" / "p.json"
    with pytest.raises(PyfxprofError) as info:
        make_profile().save(path)
    assert str(info.value) == f"cannot write {path}: No such file or directory"


def test_failed_save_leaves_no_partial_file(tmp_path):
    (tmp_path / "p.json").mkdir()  # os.replace onto a directory fails after the write
    with pytest.raises(PyfxprofError, match="cannot write"):
        make_profile().save(tmp_path / "p.json")
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]


def test_save_refuses_values_without_json_encoding(tmp_path):
    profile = make_profile()
    profile.nodes["when"] = pd.Series([object()] * 4, dtype=object)
    with pytest.raises(PyfxprofError, match="cannot save profile to .*p.json.*'when'.*object"):
        profile.save(tmp_path / "p.json")
    assert not list(tmp_path.iterdir())


def test_run_starts_validation_and_equality():
    with pytest.raises(ValueError, match="run_starts has 2 runs but samples has 6"):
        Profile(make_profile().nodes, make_profile().samples, make_profile().run_totals,
                run_starts=np.array([1, 2]))
    with pytest.raises(ValueError, match="run_starts must hold integer"):
        Profile(make_profile().nodes, make_profile().samples, make_profile().run_totals,
                run_starts=np.zeros(6))
    assert make_profile(run_starts=True) != make_profile()
    assert make_profile(run_starts=True) == make_profile(run_starts=True)


def test_nan_in_metadata_survives_a_round_trip_and_compares_equal(tmp_path):
    original = make_profile()
    original.meta["overhead_iqr_ns"] = float("nan")  # NaN: unknown (not in a count)
    original.meta["notes"] = {"ratios": [1.5, float("nan")], "pair": (float("nan"), "x")}
    save_profile(original, tmp_path / "p.json")
    loaded = load_profile(tmp_path / "p.json")
    assert loaded == original
    loaded.meta["notes"]["ratios"][1] = 2.0
    assert loaded != original
