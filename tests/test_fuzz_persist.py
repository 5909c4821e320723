"""Fuzzing the loader with mutated saved profiles: ~2,700 files (deterministic hypothesis runs of
structural and byte edits, every known field and node column set to values of every JSON kind,
value amplification and duplicate keys), ~20 s of CPU.

The invariant, for every mutated file: ``load_profile`` either refuses it with one
PyfxprofError line that names the path, or returns a Profile that passes
:func:`assert_consistent` (independent checks of types, shapes, ranges, coverage recomputed),
survives a save/load round trip unchanged, and renders through table, tree, `pyfxprof report`,
HTML, Chrome trace, folded stacks, flame graph, speedscope and advise. Rendering is the costly
part, so it is done once per distinct accepted profile, and the accepted values of every field
are rendered together in one document per value. (The HTML report's PNG plot is left out here:
matplotlib's rasterising would take most of the time, and tests/views/test_plot.py covers it.)
Any other exception is a failure. Counts are printed with ``pytest -s``.
"""

import base64
import collections
import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import shutil
import tempfile
import threading
import tracemalloc
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyfxprof.cli.main import main
from pyfxprof.data import validate
from pyfxprof.data.persist import load_profile, save_profile
from pyfxprof.data.profile import NODE_COLUMNS, Profile
from pyfxprof.errors import PyfxprofError
from pyfxprof.views import html_report
from tests.data.test_persist import make_profile

OUTCOMES = collections.Counter()
SETTINGS = {"deadline": None, "derandomize": True, "database": None,
            "suppress_health_check": list(HealthCheck)}

_BASES = [make_profile(), make_profile(runs=3, device=True, run_starts=True, seed=1),
          make_profile(runs=1, extra=False, seed=2)]
_DOCS = []
#: sha256 of the saved form of every profile rendered so far.
_RENDERED = set()
#: Where mutated files are written: memory when the system has it (disk writes dominate).
_FOLDER = []
_DTYPES = ["<i8", "<u8", "<i4", "<u2", ">i8", "<f8", "<f4", "|b1", "|u1", "<i2", "|O", "<c16",
           "[('a', '<i8')]", "(2,)<i8", "V8", "<M8[ns]", "", 7, None]

json_values = st.recursive(
    st.none() | st.booleans() | st.text(max_size=8)
    | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=10)


@pytest.fixture(scope="module", autouse=True)
def base_documents(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setattr(html_report, "_plot_img", lambda profile, kind="nodes": "<p>plot left out</p>")
    folder = tmp_path_factory.mktemp("bases")
    for i, prof in enumerate(_BASES):
        save_profile(prof, folder / f"{i}.json")
        _DOCS.append(json.loads((folder / f"{i}.json").read_text()))
    _FOLDER.append(Path(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else folder)))
    yield
    shutil.rmtree(_FOLDER[0], ignore_errors=True)
    patch.undo()
    print(f"\nfuzz: {sum(OUTCOMES.values())} files, {OUTCOMES['refused']} refused with one line, "
          f"{OUTCOMES['accepted']} accepted and consistent ({len(_RENDERED)} distinct profiles "
          "rendered), 0 tracebacks")


def _paths(value, prefix=()):
    """Every (container path, key) in a JSON document."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        yield prefix, key
        if isinstance(child, (dict, list)):
            yield from _paths(child, prefix + (key,))


def _at(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _mutate_tree(doc, data):
    """Replace, delete or duplicate one value anywhere in the document."""
    paths = list(_paths(doc))
    prefix, key = paths[data.draw(st.integers(0, len(paths) - 1), label="where")]
    parent = _at(doc, prefix)
    action = data.draw(st.sampled_from(["replace", "delete", "copy_sibling"]), label="action")
    if action == "delete":
        del parent[key]
    elif action == "copy_sibling" and len(parent) > 1:
        keys = list(parent.keys()) if isinstance(parent, dict) else list(range(len(parent)))
        parent[key] = json.loads(json.dumps(parent[data.draw(st.sampled_from(keys))]))
    else:
        parent[key] = data.draw(json_values, label="value")


def _mutate_array(doc, data):
    """Rewrite one packed array: its dtype, its shape, or its bytes (any int64 values)."""
    arrays = [("doc", k) for k in ("samples", "run_totals", "device_samples", "run_starts")
              if isinstance(doc.get(k), dict)]
    columns = doc.get("nodes") if isinstance(doc.get("nodes"), list) else []
    arrays += [("column", i) for i, c in enumerate(columns)  # earlier mutations may have
               if isinstance(c, dict) and isinstance(c.get("array"), dict)]  # broken them
    if not arrays:
        return
    where, key = data.draw(st.sampled_from(arrays), label="array")
    packed = doc[key] if where == "doc" else doc["nodes"][key]["array"]
    part = data.draw(st.sampled_from(["dtype", "shape", "values"]), label="part")
    if part == "dtype":
        packed["dtype"] = data.draw(st.sampled_from(_DTYPES))
    elif part == "shape":
        packed["shape"] = data.draw(st.lists(st.integers(-2, 9), max_size=3))
    else:
        count = max(1, math.prod(n for n in packed["shape"] if isinstance(n, int)))
        values = data.draw(st.lists(st.integers(-2**63, 2**63 - 1), min_size=count,
                                    max_size=count))
        raw = np.array(values, dtype="<i8").tobytes()
        packed["data"] = base64.b64encode(raw).decode()
        packed["dtype"] = "<i8"


def _load(text, expect_refusal: str | None = None, render: bool = True) -> bool:
    """Load ``text`` as a file: refused in one line (containing ``expect_refusal`` when given),
    or accepted, consistent and (if ``render``) rendered everywhere, once per distinct profile
    (a case that loads to a profile equal to an earlier one's, saved byte for byte the same,
    renders the same). True when accepted."""
    tmp_path = _FOLDER[0]
    path = tmp_path / "fuzzed.json"
    path.write_text(text)
    try:
        prof = load_profile(path)
    except PyfxprofError as error:
        message = str(error)
        assert message.startswith(f"cannot load profile {path}: ") and "\n" not in message
        assert expect_refusal is None or expect_refusal in message, message
        OUTCOMES["refused"] += 1
        return False
    assert expect_refusal is None, f"accepted, expected a refusal: {expect_refusal}"
    assert_consistent(prof)
    save_profile(prof, tmp_path / "again.json")
    saved = (tmp_path / "again.json").read_bytes()
    assert load_profile(tmp_path / "again.json") == prof
    OUTCOMES["accepted"] += 1
    if render and hashlib.sha256(saved).digest() not in _RENDERED:
        assert_renders(prof, tmp_path, path)
        _RENDERED.add(hashlib.sha256(saved).digest())
    return True


def assert_consistent(prof: Profile) -> None:
    """Independent checks of an accepted profile (not the validator's own tables)."""
    runs, n = prof.samples.shape
    assert prof.samples.dtype == np.int64 and prof.run_totals.dtype == np.int64
    assert prof.run_totals.shape == (runs,) and (prof.samples >= 0).all()
    assert (prof.run_totals >= 0).all()
    for extra in (prof.device_samples, prof.run_starts):
        assert extra is None or extra.dtype == np.int64
    assert prof.device_samples is None or (prof.device_samples >= 0).all()
    assert list(prof.nodes.columns[:0]) == [] and set(NODE_COLUMNS) <= set(prof.nodes.columns)
    names = prof.nodes["name"].tolist()
    assert len(names) == n and all(isinstance(x, str) for x in names)
    assert len(set(names)) == n
    meta = prof.meta
    for key in ("runs", "warmup", "dropped_records", "incomplete_runs", "flops"):
        value = meta.get(key)
        assert value is None or (type(value) is int and value >= 0), (key, value)
    overhead = meta.get("overhead_ns")
    assert overhead is None or (isinstance(overhead, (int, float)) and not overhead < 0)
    model = (prof.nodes["op"] != "range").to_numpy()
    if runs and model.any():
        slack = (2 * n + 2) * (math.ceil(overhead or 0 if overhead == overhead else 0) + 1)
        assert (prof.samples[:, model].max(axis=1) <= prof.run_totals + slack).all()
    if "coverage" in meta and runs:
        with np.errstate(divide="ignore", invalid="ignore"):
            shares = prof.samples[:, model].sum(axis=1) / prof.run_totals
        expected = float(np.median(shares)) if np.isfinite(shares).all() else 1.0
        assert meta["coverage"] == expected


#: Every export but the PNG plot: the HTML page holds a table, the tree, the flame
#: graph and advise()'s advice.
_EXPORTS = {"html": "r.html", "chrome_trace": "t.json", "stacks": "s.txt",
            "flamegraph": "f.svg", "speedscope": "ss.json", "csv": "n.csv"}


def assert_renders(prof: Profile, tmp_path, path) -> None:
    """Every view of ``prof``: `pyfxprof report --tree` of its file (no raw control characters
    on the terminal), its repr, its advice as text, and every export (non-empty, JSON and XML
    well-formed). advise() runs once: the HTML page renders the same advice."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        assert main(["report", str(path), "--tree"]) == 0, out.getvalue()
    assert out.getvalue().count("\n") >= 3
    assert not any(c in out.getvalue() for c in "\x1b\x07\x9b"), "raw control characters"
    repr(prof)
    advice = prof.advise()
    assert str(advice)
    prof.advise = lambda: advice
    for export_format, name in _EXPORTS.items():
        prof.export(tmp_path / name, export_format)
    for name in ("t.json", "ss.json"):
        json.loads((tmp_path / name).read_text())
    ElementTree.fromstring((tmp_path / "f.svg").read_bytes())
    for name in _EXPORTS.values():
        assert (tmp_path / name).stat().st_size > 0
        (tmp_path / name).unlink()  # written again by the next case, never left from this one


@settings(max_examples=600, **SETTINGS)
@given(st.data())
def test_mutated_documents(data):
    doc = json.loads(json.dumps(_DOCS[data.draw(st.integers(0, len(_DOCS) - 1), label="base")]))
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        mutate = data.draw(st.sampled_from([_mutate_tree, _mutate_tree, _mutate_array]))
        mutate(doc, data)
    _load(json.dumps(doc))


@settings(max_examples=600, **SETTINGS)
@given(st.data())
def test_mutated_bytes(data):
    text = json.dumps(_DOCS[data.draw(st.integers(0, len(_DOCS) - 1), label="base")])
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        at = data.draw(st.integers(0, len(text) - 1), label="at")
        edit = data.draw(st.sampled_from(["flip", "cut", "insert"]), label="edit")
        piece = data.draw(st.sampled_from(list('0123456789-.eE[]{}",:tfn ') + ["Infinity",
                                                                              "NaN", "9" * 30]))
        if edit == "cut":
            text = text[:at] + text[at + data.draw(st.integers(1, 50)):]
        else:
            text = text[:at] + piece + text[at + (edit == "flip"):]
    _load(text)


#: Values of every JSON kind (and the edge of each range) tried in every known field.
_FIELD_VALUES = [None, True, 0, -1, 7, 2**53 + 1, 2**63 - 1, 2**63, 1.5, -0.0, 1e300, "", "x",
                 "a\x1b[31mRED\x07\ud800", [], [1, 2], ["a", "b"], [None, 5], {"name": "tsc"},
                 {"$float": "nan"}, {"$float": "-inf"}, {"$tuple": ["a"]}, {"$na": None},
                 {"$dict": {"$na": None}}, [["a", "b"]], {"a": "b"}]


def _set_meta(doc, key, value):
    doc["meta"][key] = value


def _set_column(doc, key, value):
    for column in doc["nodes"]:
        if column["name"] == key:
            if "array" in column:  # a packed column becomes a JSON-valued one
                column.pop("array")
                column["dtype"] = "object"
            column["values"] = [value] * doc["n_nodes"]
            return
    doc["nodes"].append({"name": key, "dtype": "object", "values": [value] * doc["n_nodes"]})


_META_KEYS = sorted({f.key for f in validate.META_FIELDS} | {"between_nodes_ns", "runs"})
_COLUMN_KEYS = sorted({f.key for f in validate.NODE_FIELDS})


def _set(doc, key, value):
    if key.startswith("nodes."):
        _set_column(doc, key[len("nodes."):], value)
    else:
        _set_meta(doc, key, value)


@pytest.mark.parametrize("value", _FIELD_VALUES, ids=[f"{v!r:.20}" for v in _FIELD_VALUES])
def test_every_field_with_values_of_every_kind(value):
    """``value`` in each known field alone: refused in one line or accepted and consistent;
    then the fields that accepted it all set at once, accepted and rendered everywhere (one
    render shows every accepted field's value)."""
    base = _DOCS[_FIELD_VALUES.index(value) % 2]
    accepted = []
    for key in _META_KEYS + [f"nodes.{k}" for k in _COLUMN_KEYS]:
        doc = json.loads(json.dumps(base))
        _set(doc, key, value)
        if _load(json.dumps(doc), render=False):
            accepted.append(key)
    doc = json.loads(json.dumps(base))
    for key in accepted:
        _set(doc, key, value)
    assert _load(json.dumps(doc)), f"accepted one by one, refused together: {accepted}"


@pytest.mark.parametrize("case, reason", [
    ({"meta": {"$float": "nan"}}, "meta must be an object"),
    ({"meta.versions": {"$float": "nan"}}, "'versions' must be an object of strings"),
    ({"meta.overhead_ns": 2**63 - 1}, "'overhead_ns' must be a finite number of ns"),
    ({"meta.between_nodes_ns": [1, 2]}, "'between_nodes_ns' must be a finite number of ns"),
    ({"meta.between_nodes_ns": "x"}, "'between_nodes_ns' must be a finite number of ns"),
    ({"meta.warmup_totals_ns": [2**63]}, "'warmup_totals_ns' must be a list of integer ns"),
    ({"meta.runs": 999}, "meta field 'runs' is 999 but samples has 6 runs"),
    ({"nodes.inputs": ["x"]}, "'inputs' must hold a list of node names"),
])
def test_the_audits_accepted_then_crashing_files_are_refused(case, reason):
    doc = json.loads(json.dumps(_DOCS[0]))
    for where, value in case.items():
        if where == "meta":
            doc["meta"] = value
        elif where.startswith("nodes."):
            _set_column(doc, where[len("nodes."):], value)
        else:
            _set_meta(doc, where[len("meta."):], value)
    _load(json.dumps(doc), expect_refusal=reason)


@pytest.mark.parametrize("where", ["samples", "meta", "first"])
def test_duplicate_keys_are_refused(where):
    text = json.dumps(_DOCS[0])
    if where == "samples":  # a second "samples" of zeros would win silently
        zeros = dict(_DOCS[0]["samples"], data=base64.b64encode(bytes(8 * 24)).decode())
        text = text[:-1] + ', "samples": ' + json.dumps(zeros) + "}"
    elif where == "meta":
        text = text.replace('"meta": {', '"meta": {"model": "a", ', 1)
    else:
        text = '{"format": "x", ' + text[1:]
    _load(text, expect_refusal="appears twice in one object")


def _padded(padding: str, count: int, filler: int = 0) -> str:
    """The first base document with ``count`` copies of ``padding`` in meta, beside a string of
    ``filler`` commas (counted as values only by the cheap bound, not by the exact count)."""
    pad = "[" + ",".join([padding] * count) + "]"
    return json.dumps(_DOCS[0]).replace(
        '"meta": {', f'"meta": {{"filler": "{"," * filler}", "pad": {pad}, ', 1)


@pytest.mark.parametrize("padding", ["{}", "[]", "0", '""'])
def test_value_amplification_is_refused_before_parsing(padding):
    """More values than one per MIN_BYTES_PER_VALUE bytes of the file (past FREE_VALUES):
    refused by counting, before any is built (the audit's 250 MiB of {} took 11 GB)."""
    _load(_padded(padding, validate.FREE_VALUES),
          expect_refusal="a file of that size may hold (one per 4 bytes")


def _densest(padding: str, size: int) -> str:
    """A file of ``size`` bytes holding as many ``padding`` values as its size allows."""
    count = size // validate.MIN_BYTES_PER_VALUE // validate.element_bound("," + padding)
    text = _padded(padding, count - 1000)
    return _padded(padding, count - 1000, size - len(text))


@pytest.mark.parametrize("padding", ["{}", "0"])
def test_memory_of_a_load_is_a_small_multiple_of_the_file(padding):
    """The densest padding a 1 MiB file may hold loads, renders, and takes at most 8 times the
    file's size at its peak (Python allocations, tracemalloc: 6.3 times for {}, 2.9 for 0);
    before the cap was relative to the size, a 3 MiB file of {} took 47 times its size in
    RSS."""
    text = _densest(padding, 1 << 20)
    assert validate.element_bound(text) > validate.value_cap(len(text))  # the commas count
    (_FOLDER[0] / "dense.json").write_text(text)
    tracemalloc.start()
    try:
        load_profile(_FOLDER[0] / "dense.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 8 * len(text), f"{peak / len(text):.1f} times the file's size"


def test_padding_under_the_cap_loads_and_renders():
    _load(_padded(json.dumps([{}, [], 0, ""]).strip("[]"), 1000, 100))


def _feed_forever(write_end: int, chunk: bytes) -> None:
    try:
        while True:
            os.write(write_end, chunk)
    except OSError:  # the reader closed its end
        pass
    finally:
        os.close(write_end)


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "stdin pipe", "gzip fifo"])
def test_endless_inputs_are_refused_at_the_cap(kind, tmp_path, monkeypatch, capsys):
    """Issue 37: `pyfxprof report /dev/zero` read until memory ran out (stat says 0 bytes).
    A device, a FIFO or a pipe on stdin fed forever is refused in one line once the cap (1 MiB
    here) is read, compressed or not."""
    from pyfxprof.data import files
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1 << 20)
    chunk = gzip.compress(bytes(1 << 20)) if kind == "gzip fifo" else b"{" * 65536
    path = "/dev/zero"
    if kind.endswith("fifo"):
        path = tmp_path / "endless.json"
        os.mkfifo(path)
        threading.Thread(target=lambda: _feed_forever(os.open(path, os.O_WRONLY), chunk),
                         daemon=True).start()
    elif kind == "stdin pipe":
        read_end, write_end = os.pipe()
        threading.Thread(target=_feed_forever, args=(write_end, chunk), daemon=True).start()
        path = f"/proc/self/fd/{read_end}"
    try:
        assert main(["report", str(path)]) == 2
    finally:
        if kind == "stdin pipe":
            os.close(read_end)
    err = capsys.readouterr().err.strip()
    assert "more than 1 MiB; refusing to read it" in err and "\n" not in err, err
