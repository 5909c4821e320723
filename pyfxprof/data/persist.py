"""Saved profiles: versioned JSON (gzip when the name ends in .gz), never pickle, never eval.

Numeric arrays are packed as base64 of little-endian bytes with dtype and shape; the nodes
table is stored column-wise with dtypes; object cells use a small tagged encoding so tuples,
NaN and None come back as they were. The schema is documented in docs/profile_format.md.
"""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from ..errors import ArgumentError, PyfxprofError, first_line
from . import validate
from .files import PathLike, open_output, read_maybe_gzipped
from .profile import Profile
from .run_noise import NOISE_COLUMNS
from .validate import FormatError

FORMAT = "pyfxprof-profile"
#: Version 2 added ``run_noise`` (per-run context switches, CPU/wall ns); version 1 files load
#: with ``run_noise`` None. Version 3 added the ``(Python outside the graph)`` row (op
#: ``outside_graph``, not a model node) and ``meta["call"]``; version 1 and 2 files load
#: without them. Version 4 added the nodes' ``alone_ns``, ``alone_low_ns``, ``alone_high_ns``
#: and ``alone_note`` columns and ``meta["alone"]`` (the nodes timed alone: run/alone.py);
#: version 1 to 3 files load without them.
VERSION = 4
_NUMERIC_KINDS = "biuf"
_TAGS = ("$tuple", "$float", "$na", "$array", "$dict")


# ---- writing -------------------------------------------------------------------------------

def pack_array(array: np.ndarray) -> dict:
    """A numeric array as ``{"dtype", "shape", "data"}`` (base64 of little-endian bytes).

    >>> pack_array(np.array([1, 2], dtype=np.int64))
    {'dtype': '<i8', 'shape': [2], 'data': 'AQAAAAAAAAACAAAAAAAAAA=='}
    """
    array = np.asarray(array)
    if array.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(f"cannot pack an array of dtype {array.dtype}")
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    data = base64.b64encode(little.tobytes()).decode("ascii")
    return {"dtype": little.dtype.str, "shape": list(array.shape), "data": data}


def encode_value(value):
    """A Python value as JSON data; tuples, non-finite floats, pd.NA and arrays are tagged.

    >>> encode_value({"stack": ("a", "a.b"), "x": float("nan"), "n": None})
    {'stack': {'$tuple': ['a', 'a.b']}, 'x': {'$float': 'nan'}, 'n': None}
    """
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if value is pd.NA:
        return {"$na": None}
    if isinstance(value, tuple):
        return {"$tuple": [encode_value(v) for v in value]}
    if isinstance(value, list):
        return [encode_value(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"$array": pack_array(value)}
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise TypeError(f"dict keys must be str to be saved, got {bad[0]!r}")
        encoded = {k: encode_value(v) for k, v in value.items()}
        return {"$dict": encoded} if len(value) == 1 and next(iter(value)) in _TAGS else encoded
    raise TypeError(f"a value of type {type(value).__name__} cannot be saved as JSON")


def _encode_column(name, series: pd.Series) -> dict:
    if not isinstance(name, str):
        raise TypeError(f"nodes column names must be str, got {name!r}")
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in _NUMERIC_KINDS:
        return {"name": name, "array": pack_array(series.to_numpy())}
    try:
        values = [encode_value(v) for v in series.tolist()]
    except TypeError as error:
        raise TypeError(f"nodes column {name!r}: {error}") from None
    return {"name": name, "dtype": str(dtype), "values": values}


def to_document(profile: Profile) -> dict:
    """The JSON document (plain dicts and lists) of the current VERSION of the format."""
    arrays = {field.key: getattr(profile, field.key) for field in validate.ARRAY_FIELDS}
    return {
        "format": FORMAT, "version": VERSION, "pyfxprof_version": __version__,
        "n_runs": profile.n_runs, "n_nodes": profile.n_nodes,
        "meta": encode_value(profile.meta),
        "nodes": [_encode_column(n, profile.nodes[n]) for n in profile.nodes.columns],
        **{k: None if v is None else pack_array(v) for k, v in arrays.items()},
    }


def save_profile(profile: Profile, path: PathLike) -> None:
    """``Profile.save``: write ``profile`` to ``path`` as versioned JSON, gzip-compressed when
    the name ends in .gz.

    Written as :func:`files.open_output` writes (a temporary file renamed into place, so a
    crash never leaves a half-written profile under the final name).

    >>> save_profile(prof, "rn18.json.gz")  # doctest: +SKIP
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"path must be a file name (str or os.PathLike), got "
                            f"{type(path).__name__}")
    try:
        document = to_document(profile)
    except TypeError as error:
        raise PyfxprofError(f"cannot save profile to {path}: {error}") from None
    write_document(document, path, "profile")


def write_document(document: dict, path, what: str) -> None:
    """Write a JSON ``document`` to ``path`` (gzip when the name ends in .gz) through
    :func:`files.open_output`; ``what`` names the document in one-line errors.

    >>> write_document({"format": "x"}, "x.json", "profile")  # doctest: +SKIP
    """
    try:
        text = json.dumps(document, allow_nan=False, separators=(",", ":"))
    except TypeError as error:
        raise PyfxprofError(f"cannot save {what} to {path}: {error}") from None
    with open_output(path) as stream:
        stream.write(text)


# ---- reading -------------------------------------------------------------------------------

def unpack_array(packed, what: str, ndim: int | None = None) -> np.ndarray:
    """Inverse of :func:`pack_array`; FormatError on a bad dtype, shape or byte count."""
    if not isinstance(packed, dict) or not {"dtype", "shape", "data"} <= packed.keys():
        raise FormatError(f"{what} is not a packed array (dtype, shape, data)")
    try:
        dtype = validate.array_dtype(packed["dtype"])
        shape = validate.array_shape(packed["shape"], ndim)
    except FormatError as error:
        raise FormatError(f"{what}: {error}") from None
    if not isinstance(packed["data"], str):
        raise FormatError(f"{what}: data must be a base64 string")
    expected = math.prod(shape) * dtype.itemsize
    if expected > 3 * len(packed["data"]) // 4 + 3:  # before decoding: cheap and bounded
        raise FormatError(f"{what}: at most {3 * len(packed['data']) // 4} bytes do not fit "
                          f"shape {list(shape)} of {dtype}")
    try:
        raw = base64.b64decode(packed["data"], validate=True)
    except ValueError:
        raise FormatError(f"{what}: data is not valid base64") from None
    if len(raw) != expected:
        raise FormatError(f"{what}: {len(raw)} bytes do not fit shape {list(shape)} of {dtype}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def _decode_tag(tag: str, inner):
    """The value of one tagged object (see :func:`encode_value`)."""
    if tag == "$tuple" and isinstance(inner, list):
        return tuple(_decode_children(inner))
    if tag == "$float" and inner in ("nan", "inf", "-inf"):
        return float(inner)
    if tag == "$na" and inner is None:
        return pd.NA
    if tag == "$array":
        return unpack_array(inner, "array cell")
    if tag == "$dict" and isinstance(inner, dict):
        return _decode_children(inner)
    raise FormatError(f"bad {tag} value {inner!r:.40}")


def _decode_children(container: list | dict) -> list | dict:
    """``container`` with each of its values decoded, in place."""
    if validate.CONTAINERS.isdisjoint(map(type, container.values() if isinstance(
            container, dict) else container)):
        return container  # only scalars: nothing to decode
    for key, value in (enumerate(container) if isinstance(container, list)
                       else container.items()):
        if isinstance(value, (list, dict)):
            container[key] = decode_value(value)
    return container


def decode_value(data: Any) -> Any:
    """Inverse of :func:`encode_value`. Lists and dicts of parsed JSON are decoded in place (a
    loaded document is never copied, so it takes memory once).

    >>> decode_value({"stack": {"$tuple": ["a", "a.b"]}, "x": {"$float": "inf"}})
    {'stack': ('a', 'a.b'), 'x': inf}
    """
    if isinstance(data, dict) and len(data) == 1 and next(iter(data)) in _TAGS:
        return _decode_tag(*next(iter(data.items())))
    return _decode_children(data) if isinstance(data, (list, dict)) else data


def _decode_column(column, n_nodes: int) -> tuple[str, pd.Series]:
    if not isinstance(column, dict) or not isinstance(column.get("name"), str):
        raise FormatError("a nodes column has no name")
    name = column["name"]
    if "array" in column:
        series = pd.Series(unpack_array(column["array"], f"nodes column {name!r}", ndim=1))
    elif isinstance(column.get("values"), list):
        series = _value_column(name, column)
    else:
        raise FormatError(f"nodes column {name!r} has neither 'array' nor 'values'")
    if len(series) != n_nodes:
        raise FormatError(f"nodes column {name!r} has {len(series)} rows, expected {n_nodes}")
    return name, series


def _value_column(name: str, column: dict) -> pd.Series:
    dtype = column.get("dtype", "object")
    if not isinstance(dtype, str) or dtype not in validate.VALUE_COLUMN_DTYPES:
        raise FormatError(f"nodes column {name!r}: dtype {dtype!r:.40} is not one of "
                          f"{sorted(validate.VALUE_COLUMN_DTYPES)}")
    values = decode_value(column["values"])
    if dtype != "object" and not all(_is_text_cell(v) for v in values):
        raise FormatError(f"nodes column {name!r} of dtype {dtype} holds non-string values")
    try:
        return pd.Series(values, dtype=object if dtype == "object" else dtype)
    except (TypeError, ValueError) as error:
        raise FormatError(f"nodes column {name!r}: cannot restore dtype {dtype}: "
                          f"{first_line(error)}") from None


def _is_text_cell(value) -> bool:
    """A cell of a string column: text or missing (None, NaN)."""
    return value is None or isinstance(value, str) or (
        isinstance(value, float) and math.isnan(value))


def _check_header(doc) -> None:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise FormatError(f"not a pyfxprof profile (no \"format\": \"{FORMAT}\" field)")
    version = doc.get("version")
    if not validate.is_int(version) or version < 1:
        raise FormatError(f"unsupported format version {version!r:.40}")
    if version > VERSION:
        raise FormatError(f"written by a newer pyfxprof (format version {version} > "
                          f"{VERSION}); upgrade pyfxprof")
    missing = [k for k in ("n_nodes", "nodes", "meta", "samples", "run_totals") if k not in doc]
    if missing:
        raise FormatError(f"missing fields {missing}")
    validate.check_fields(doc, validate.HEADER_FIELDS, "profile")
    if not isinstance(doc["nodes"], list) or not isinstance(doc["meta"], dict):
        raise FormatError("'nodes' must be a list of columns and 'meta' an object")


def _decode_nodes(doc) -> pd.DataFrame:
    columns = [_decode_column(c, doc["n_nodes"]) for c in doc["nodes"]]
    names = [name for name, _ in columns]
    if len(set(names)) != len(names):
        raise FormatError("two nodes columns have the same name")
    nodes = pd.DataFrame(dict(columns), index=pd.RangeIndex(doc["n_nodes"]))
    validate.check_node_cells(nodes)
    return nodes


def _decode_arrays(doc, n_nodes: int) -> dict:
    arrays: dict[str, np.ndarray | None] = {}
    n_runs: int | None = None
    for field in validate.ARRAY_FIELDS:
        if doc.get(field.key) is None:
            if field.required:
                raise FormatError(f"{field.key} is missing")
            arrays[field.key] = None
            continue
        array = unpack_array(doc[field.key], field.key, ndim=len(field.axes))
        expected = {"runs": array.shape[0] if n_runs is None else n_runs, "nodes": n_nodes,
                    "noise": len(NOISE_COLUMNS)}
        if array.shape != tuple(expected[axis] for axis in field.axes):
            raise FormatError(f"{field.key} has shape {list(array.shape)}, expected "
                              f"{[expected[axis] for axis in field.axes]} ({' x '.join(field.axes)})")
        n_runs = array.shape[0]
        arrays[field.key] = validate.as_int64(array, field.key, field.non_negative)
    if doc.get("n_runs", n_runs) != n_runs:
        raise FormatError(f"n_runs is {doc['n_runs']!r} but samples has {n_runs} runs")
    return arrays


def from_document(doc) -> Profile:
    """The Profile of a JSON document of format version 1..VERSION; FormatError explains any
    problem.

    The coverage (a figure derived from the samples) is recomputed, not read.
    """
    _check_header(doc)
    arrays = _decode_arrays(doc, doc["n_nodes"])  # cheap checks first, the frame last
    meta = decode_value(doc["meta"])
    validate.check_fields(meta, validate.META_FIELDS, "meta")
    nodes = _decode_nodes(doc)
    if "op" in nodes.columns:
        mask = validate.model_nodes(nodes)
        timed = arrays["samples"] + (0 if arrays["backward_samples"] is None
                                     else arrays["backward_samples"])
        validate.check_runs(arrays["samples"], arrays["run_totals"], meta, mask)
        validate.recompute_derived(timed, arrays["run_totals"], meta, mask)
    try:
        return Profile(nodes, meta=meta, **arrays)
    except ValueError as error:
        raise FormatError(f"inconsistent profile: {error}") from None


def read_document(path: Path, doing: str):
    """The JSON data of ``path`` through the validation layer's safe parser (gzip detected
    from the content); PyfxprofError ("<doing> <path>: ...") when unreadable, FormatError
    when not UTF-8 JSON.

    >>> read_document(Path("p.json"), "cannot load profile")  # doctest: +SKIP
    {'format': 'pyfxprof-profile', ...}
    """
    return validate.parse_json(read_maybe_gzipped(path, doing))


def load_profile(path: PathLike) -> Profile:
    """Read a profile written by :func:`save_profile` (gzip is detected from the content).

    Raises PyfxprofError naming ``path`` and the reason when the file is missing, corrupt,
    truncated, too large, nested too deeply, not a pyfxprof profile, from a newer format
    version, or inconsistent.

    >>> prof = load_profile("rn18.json.gz")  # doctest: +SKIP
    >>> prof == original  # doctest: +SKIP
    True
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"path must be a file name (str or os.PathLike), got "
                            f"{type(path).__name__}; to load bytes, write them to a file first")
    path = Path(path)
    try:
        return from_document(read_document(path, "cannot load profile"))
    except FormatError as error:
        raise PyfxprofError(f"cannot load profile {path}: {error}") from None
    except MemoryError:
        raise PyfxprofError(f"cannot load profile {path}: out of memory while reading it; "
                            "free memory or load it on a larger machine") from None
