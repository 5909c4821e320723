"""Saved profiles as an untrusted surface: each known crasher and each accepted-but-wrong file
of issue 14 is refused with one line naming the path, or loads consistent and renders."""

import base64
import gzip
import json
import zlib

import numpy as np
import pytest

from pyfxprof.cli import main as cli
from pyfxprof.data import files
from pyfxprof.data.persist import load_profile, save_profile
from pyfxprof.data.validate import FormatError, check_depth, parse_json, run_coverage
from pyfxprof.errors import PyfxprofError
from tests.data.test_persist import make_profile


def saved_doc(tmp_path, **options):
    make_profile(**options).save(tmp_path / "good.json")
    return json.loads((tmp_path / "good.json").read_text())


def write(tmp_path, doc, name="bad.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def refused(path, reason):
    with pytest.raises(PyfxprofError) as info:
        load_profile(path)
    message = str(info.value)
    assert message.startswith(f"cannot load profile {path}: ") and "\n" not in message, message
    assert reason in message, message


def packed(array):
    little = np.ascontiguousarray(array)
    return {"dtype": little.dtype.str, "shape": list(array.shape),
            "data": base64.b64encode(little.tobytes()).decode()}


# ---- known crashers ----------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [65, 500, 5000])
def test_deep_nesting_is_refused(tmp_path, depth):
    doc = saved_doc(tmp_path)
    text = json.dumps(doc).replace('"meta": {', '"meta": {"deep": ' + "[" * depth + "]" * depth
                                   + ", ", 1)
    (tmp_path / "deep.json").write_text(text)
    refused(tmp_path / "deep.json", "nested deeper than 64 levels")


def test_a_4400_digit_integer_is_refused(tmp_path):
    text = json.dumps(saved_doc(tmp_path)).replace('"runs": 6', '"runs": ' + "9" * 4400, 1)
    (tmp_path / "big.json").write_text(text)
    refused(tmp_path / "big.json", "an integer of 4400 digits is too large")


def test_a_2d_nodes_column_is_refused(tmp_path):
    doc = saved_doc(tmp_path)
    flops = next(c for c in doc["nodes"] if c["name"] == "flops")
    flops["array"] = packed(np.zeros((2, 2), dtype=np.int64))
    refused(write(tmp_path, doc), "shape [2, 2] has 2 dimensions, expected 1")


def test_infinity_in_a_shape_is_refused(tmp_path):
    text = json.dumps(saved_doc(tmp_path)).replace('"shape": [6, 4]', '"shape": [Infinity, 4]', 1)
    (tmp_path / "inf.json").write_text(text)
    refused(tmp_path / "inf.json", "Infinity is not valid in a saved profile")


@pytest.mark.parametrize("dtype", ["[('a', '<i8')]", "(2,)<i8", "<i8,<i8", "V8", "<M8[ns]"])
def test_compound_array_dtypes_are_refused(tmp_path, dtype):
    doc = saved_doc(tmp_path)
    doc["samples"]["dtype"] = dtype
    refused(write(tmp_path, doc), "is not a plain integer or float dtype")


@pytest.mark.parametrize("dtype", ["int64,int64", "category", "datetime64[ns]"])
def test_unknown_value_column_dtypes_are_refused(tmp_path, dtype):
    doc = saved_doc(tmp_path)
    next(c for c in doc["nodes"] if c["name"] == "name")["dtype"] = dtype
    refused(write(tmp_path, doc), "is not one of ['object', 'str', 'string']")


@pytest.mark.parametrize("key, value", [("overhead_ns", "fast"), ("clock", "tsc"),
                                        ("versions", ["torch"]), ("capture_notes", "one"),
                                        ("flops", -1), ("coverage", "all")])
def test_wrong_typed_meta_is_refused_by_report_with_exit_2(tmp_path, capsys, key, value):
    doc = saved_doc(tmp_path)
    doc["meta"][key] = value
    path = write(tmp_path, doc)
    assert cli.main(["report", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"pyfxprof: error: cannot load profile {path}: meta field {key!r}")
    assert "\n" not in err


def test_device_samples_without_launch_bound_render(tmp_path, capsys):
    save_profile(make_profile(device=True), tmp_path / "dev.json")
    assert cli.main(["report", str(tmp_path / "dev.json")]) == 0
    out = capsys.readouterr().out
    assert "Device" in out and "Launch-bound" not in out


def _bomb(expanded: int) -> bytes:
    """Concatenated gzip members of zeros: ``expanded`` bytes once gunzipped."""
    member = gzip.compress(bytes(64 << 20), compresslevel=9)
    return member * (expanded // (64 << 20))


def test_a_gzip_bomb_is_refused_at_the_cap(tmp_path):
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(_bomb(1 << 30))  # ~1 MB on disk, 1 GiB gunzipped
    assert path.stat().st_size < 2 << 20
    refused(path, "it expands to more than 256 MiB")


def test_gunzip_capped_reads_every_member_and_refuses_truncation():
    data = gzip.compress(b"ab") + gzip.compress(b"cd")
    assert files.gunzip_capped(data, 4) == b"abcd"
    assert files.gunzip_capped(data, 3) is None
    with pytest.raises(EOFError):
        files.gunzip_capped(data[:-6], 10)
    with pytest.raises(zlib.error):
        files.gunzip_capped(data + b"garbage!", 10)


def test_an_oversized_plain_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1000)
    make_profile(runs=50).save(tmp_path / "p.json")
    refused(tmp_path / "p.json", "it holds more than 0 MiB")


# ---- accepted but wrong ----------------------------------------------------------------------

def test_negative_samples_are_refused(tmp_path):
    doc = saved_doc(tmp_path)
    samples = np.full((6, 4), 10, dtype=np.int64)
    samples[2, 1] = -5
    doc["samples"] = packed(samples)
    refused(write(tmp_path, doc), "samples holds negative durations (-5 ns)")


def test_unsigned_overflow_is_refused(tmp_path):
    doc = saved_doc(tmp_path)
    doc["samples"] = packed(np.full((6, 4), 2**64 - 1, dtype=np.uint64))
    refused(write(tmp_path, doc), "samples holds values beyond 9007199254740992 ns")


def test_run_totals_shorter_than_a_node_are_refused(tmp_path):
    doc = saved_doc(tmp_path)
    doc["run_totals"] = packed(np.full(6, 1, dtype=np.int64))
    refused(write(tmp_path, doc), "run 0: a node took")


def test_coverage_is_recomputed_not_read(tmp_path):
    doc = saved_doc(tmp_path)
    totals = np.frombuffer(base64.b64decode(doc["run_totals"]["data"]), dtype="<i8") * 2
    doc["run_totals"] = packed(totals)
    doc["meta"]["coverage"] = 1.0
    prof = load_profile(write(tmp_path, doc))
    assert prof.meta["coverage"] == pytest.approx(run_coverage(prof.samples, totals))
    assert 0.4 < prof.meta["coverage"] < 0.5
    assert "coverage 100" not in prof.table()


@pytest.mark.parametrize("names, reason", [
    (["a", "b", "a", "c"], "node name 'a' appears more than once"),
    ([1, 2, 3, 4], "nodes column 'name' must hold a string in every row, got 1"),
    (["a", None, "b", "c"], "nodes column 'name' must hold a string in every row, got None"),
])
def test_duplicate_or_non_string_node_names_are_refused(tmp_path, names, reason):
    doc = saved_doc(tmp_path)
    column = next(c for c in doc["nodes"] if c["name"] == "name")
    column["dtype"], column["values"] = "object", names
    refused(write(tmp_path, doc), reason)


@pytest.mark.parametrize("where, key, value, reason", [
    ("doc", "n_runs", 6.0, "profile field 'n_runs' must be a non-negative integer, got 6.0"),
    ("doc", "n_nodes", True, "profile field 'n_nodes' must be a non-negative integer"),
    ("meta", "runs", 6.5, "meta field 'runs' must be a non-negative int64, got 6.5"),
    ("meta", "dropped_records", -3, "meta field 'dropped_records' must be a non-negative"),
    ("meta", "overhead_ns", -1.0, "meta field 'overhead_ns' must be a finite number of ns in [0, "),
])
def test_float_counts_and_negative_figures_are_refused(tmp_path, where, key, value, reason):
    doc = saved_doc(tmp_path)
    (doc if where == "doc" else doc["meta"])[key] = value
    refused(write(tmp_path, doc), reason)


def test_interrupted_save_leaves_no_partial_file(tmp_path, monkeypatch):
    import pyfxprof.data.persist as persist

    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(persist.os, "replace", lambda a, b: interrupted(a))
    with pytest.raises(KeyboardInterrupt):
        save_profile(make_profile(), tmp_path / "p.json")
    assert list(tmp_path.iterdir()) == []


def test_plot_to_a_name_without_extension_writes_that_name(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    save_profile(make_profile(), tmp_path / "p.json")
    assert cli.main(["report", str(tmp_path / "p.json"), "--plot", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out").read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "out.png").exists()
    (tmp_path / "dir").mkdir()
    assert cli.main(["report", str(tmp_path / "p.json"), "--plot", str(tmp_path / "dir")]) == 2
    assert "it is a directory" in capsys.readouterr().err
    assert not (tmp_path / "dir.png").exists()


# ---- the parser ------------------------------------------------------------------------------

def test_parse_json_refusals_are_format_errors():
    with pytest.raises(FormatError, match="NaN is not valid"):
        parse_json('{"a": NaN}')
    assert parse_json('{"a": NaN}', allow_constants=True)["a"] != 0
    with pytest.raises(FormatError, match="invalid JSON"):
        parse_json("{")
    with pytest.raises(FormatError, match="nested deeper than 3"):
        check_depth({"a": [{"b": []}]}, limit=3)
    check_depth({"a": [{"b": 1}]}, limit=3)
