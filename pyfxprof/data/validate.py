"""Validation of the files pyfxprof loads: safe JSON parsing and a table-driven schema.

Everything read from disk is untrusted. :func:`parse_json` caps nesting depth and integer
size and refuses NaN/Infinity; the tables below say what each field of a saved profile must
hold (types, shapes, ranges, cross-field consistency). A new field is one entry in a table.
Every refusal is a :class:`FormatError` with a one-line reason; callers add the path.
Figures derived from others (coverage) are recomputed on load, never trusted.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd

from ..stats.columns import masked_row_sums

if TYPE_CHECKING:
    from typing import TypeGuard  # Python 3.10+, read by type checkers only

#: Deepest nesting of lists/objects accepted in a loaded JSON document.
MAX_JSON_DEPTH = 64
#: Most JSON values (containers, scalars and keys) any loaded document may hold: each becomes a
#: Python object of up to ~100 bytes, so this bounds the parsed document to ~400 MB whatever the
#: file. A saved 20,000-node profile holds under 1 M (its arrays are packed, one string each).
MAX_JSON_ELEMENTS = 4_000_000
#: Fewest bytes of JSON text per value (counted outside strings) a document may average, so that
#: its parsed values take a small multiple of its text's size: saved profiles average 7-14
#: bytes per value (ResNet-18: 13), torch.profiler traces 8-10, padding with ``{}`` or ``0`` 1-2.
MIN_BYTES_PER_VALUE = 4
#: Values a document may hold whatever its size (a small file is never refused for density).
FREE_VALUES = 100_000
#: Most digits of an integer literal (int64 and uint64 need at most 20).
MAX_INT_DIGITS = 20
#: Largest ns value (a duration, an overhead, a timestamp span) kept exact in float64 (104 days).
MAX_NS = 2**53
#: Packed array dtypes accepted: plain little/big-endian integers and floats.
ARRAY_DTYPE = re.compile(r"^[<>|=]?(b1|[iu][1248]|f[48])$")
#: dtypes a column stored as JSON values may be restored with.
VALUE_COLUMN_DTYPES = frozenset({"object", "str", "string"})


#: The types parsed JSON containers have (a set: ``CONTAINERS.isdisjoint(map(type, values))``
#: tells in C whether a list or dict of parsed values holds any).
CONTAINERS = frozenset({dict, list})


class FormatError(ValueError):
    """A loaded file is not what its format says (one-line reason in the message)."""


# ---- JSON ------------------------------------------------------------------------------------

def _refuse_constant(name: str):
    raise FormatError(f"{name} is not valid in a saved profile (JSON has no {name})")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise FormatError(f"an integer of {len(text)} digits is too large for any field")
    return int(text)


def _unique_keys(pairs: list) -> dict:
    """An object's dict; FormatError when a key appears twice (JSON would keep the last)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set = set()
        for key, _ in pairs:
            if key in seen:
                raise FormatError(f"key {key!r:.40} appears twice in one object")
            seen.add(key)
    return value


def element_bound(text: str | bytes) -> int:
    """An upper bound on the number of JSON values and keys in ``text`` (UTF-8 bytes or str),
    counted before parsing: every value but a container's first follows a comma or a colon, and
    each container opens with a bracket (the same characters inside strings only raise the
    bound).

    >>> element_bound('{"a": [1, 2], "b": {}}'), element_bound(b'[{}, 0]')
    (11, 6)
    """
    marks = "[{,:" if isinstance(text, str) else b"[{,:"
    opening = text.count(marks[0:1]) + text.count(marks[1:2])  # type: ignore[arg-type]
    return (text.count(marks[2:3]) + text.count(marks[3:4])  # type: ignore[arg-type]
            + 2 * opening + 1)  # (marks is str for str text, bytes for bytes)


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_STRING_BYTES = re.compile(_STRING.pattern.encode())


def value_cap(size: int, max_elements: int = MAX_JSON_ELEMENTS) -> int:
    """The most values a JSON text of ``size`` bytes may hold: one per MIN_BYTES_PER_VALUE (at
    least FREE_VALUES), at most ``max_elements``.

    >>> value_cap(10_000_000), value_cap(1_000), value_cap(10**9)
    (2500000, 100000, 4000000)
    """
    return min(max_elements, max(FREE_VALUES, size // MIN_BYTES_PER_VALUE))


def check_value_count(text: str | bytes, max_elements: int = MAX_JSON_ELEMENTS) -> None:
    """FormatError when ``text`` (UTF-8 bytes or str) holds more values than :func:`value_cap`
    allows for its size, counted before any is built (the cheap bound first, then outside
    strings only when the bound is over).

    >>> check_value_count(b"[" + b"{}," * 200_000 + b"0]")
    Traceback (most recent call last):
    ...
    pyfxprof.data.validate.FormatError: JSON of 600,003 bytes holding 600,003 values is more than the 150,000 a file of that size may hold (one per 4 bytes, at most 4,000,000; padded, or not ours)
    """
    cap = value_cap(len(text), max_elements)
    if element_bound(text) <= cap:
        return
    strings, empty = (_STRING, '""') if isinstance(text, str) else (_STRING_BYTES, b'""')
    count = element_bound(strings.sub(empty, text))  # type: ignore[arg-type]  # str or bytes
    if count > cap:
        raise FormatError(f"JSON of {len(text):,} bytes holding {count:,} values is more than "
                          f"the {cap:,} a file of that size may hold (one per "
                          f"{MIN_BYTES_PER_VALUE} bytes, at most {max_elements:,}; padded, or "
                          "not ours)")


def parse_json(raw: bytes | str, allow_constants: bool = False,
               max_elements: int = MAX_JSON_ELEMENTS) -> Any:
    """Parse JSON with a cap on its values relative to its size (checked before any is built,
    :func:`check_value_count`), a depth cap, an integer size cap, no duplicate keys and
    (unless ``allow_constants``) no NaN/Infinity; FormatError with the reason otherwise.

    >>> parse_json('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> parse_json("[" * 100 + "]" * 100)
    Traceback (most recent call last):
    ...
    pyfxprof.data.validate.FormatError: JSON nested deeper than 64 levels
    >>> parse_json('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    pyfxprof.data.validate.FormatError: key 'a' appears twice in one object
    """
    check_value_count(raw, max_elements)  # on the bytes: refused before they are decoded
    if isinstance(raw, (bytes, bytearray)):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise FormatError("not UTF-8 text, so not JSON") from None
    options: dict[str, Any] = {} if allow_constants else {"parse_constant": _refuse_constant}
    try:
        doc = json.loads(raw, parse_int=_bounded_int, object_pairs_hook=_unique_keys, **options)
    except RecursionError:
        raise FormatError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except json.JSONDecodeError as error:
        raise FormatError(f"invalid JSON ({error})") from None
    check_depth(doc)
    return doc


def check_depth(doc: Any, limit: int = MAX_JSON_DEPTH) -> None:
    """FormatError when lists/dicts in ``doc`` nest deeper than ``limit`` (no recursion, and
    memory for one iterator per level, not one entry per value).

    >>> check_depth([[[]]], limit=2)
    Traceback (most recent call last):
    ...
    pyfxprof.data.validate.FormatError: JSON nested deeper than 2 levels
    """
    stack = [iter((doc,))]
    while stack:
        for value in stack[-1]:
            if isinstance(value, (dict, list)):
                if len(stack) > limit:
                    raise FormatError(f"JSON nested deeper than {limit} levels")
                children = value.values() if isinstance(value, dict) else value
                if not CONTAINERS.isdisjoint(map(type, children)):  # else nothing deeper
                    stack.append(iter(children))
                    break
        else:
            stack.pop()


# ---- value predicates ------------------------------------------------------------------------

def is_int(value: object) -> TypeGuard[int]:
    """An int64 that is not a bool (JSON true is not a count)."""
    return bool(isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
                and -2**63 <= value < 2**63)


def is_count(value) -> bool:
    """A non-negative int."""
    return is_int(value) and value >= 0


def is_number(value) -> bool:
    """A finite int or float (not a bool)."""
    return (is_int(value) or isinstance(value, (float, np.floating))) and math.isfinite(value)


def is_amount(value) -> bool:
    """A finite, non-negative number."""
    return is_number(value) and value >= 0


def is_ns(value) -> bool:
    """A finite, non-negative number of ns of at most MAX_NS."""
    return is_amount(value) and value <= MAX_NS


def is_ns_list(value) -> bool:
    """A list of ns (int) figures or nulls."""
    return isinstance(value, list) and all(v is None or (is_int(v) and is_ns(v)) for v in value)


def is_share(value) -> bool:
    """A finite number in [0, 1e6] (a ratio: coverage may pass 1 when nodes overlap)."""
    return is_amount(value) and value <= 1e6


def is_str(value) -> bool:
    return isinstance(value, str)


def is_str_or_none(value) -> bool:
    return value is None or isinstance(value, str)


def is_str_list(value) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def is_str_dict(value) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def is_clock(value) -> bool:
    """The clock description: a name and optional non-negative figures."""
    return (isinstance(value, dict) and isinstance(value.get("name"), str)
            and all(value.get(k) is None or is_ns(value[k])
                    for k in ("resolution_ns", "read_cost_ns", "tsc_hz")))


def is_pair_list(value) -> bool:
    return isinstance(value, list) and all(is_str_list(p) and len(p) == 2 for p in value)


def is_dict(value) -> bool:
    return isinstance(value, dict)


# ---- the tables ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Field:
    """One field: ``check(value)`` must hold; ``expected`` says what it must be."""

    key: str
    check: Callable[[Any], bool]
    expected: str


#: Known metadata fields (unknown ones are carried through untouched). A missing or None
#: field (unknown) is always allowed, and NaN for a field that takes fractions.
META_FIELDS = tuple(Field(k, check, expected) for keys, check, expected in (
    (("model", "device", "mode", "capture_mode", "input_shapes", "overhead_method", "platform",
      "cpu", "timestamp", "eager_forward_error", "autograd"), is_str, "a string"),
    (("device_events",), is_str_or_none, "a string or null"),
    (("runs", "warmup", "incomplete_runs", "dropped_records", "flops", "overhead_samples",
      "cores", "threads", "cuda_peak_bytes", "excluded_runs", "eager_forward_runs"), is_count,
     "a non-negative int64"),
    (("warmup_totals_ns",), is_ns_list, f"a list of integer ns up to {MAX_NS} or nulls"),
    (("overhead_ns", "overhead_iqr_ns", "between_nodes_ns", "eager_forward_median_ns"), is_ns,
     f"a finite number of ns in [0, {MAX_NS}]"),
    (("coverage", "device_busy_share", "graph_coverage"), is_share, "a finite number in [0, 1e6]"),
    (("grad", "training", "given_training", "exported", "warmup_auto"),
     lambda v: isinstance(v, bool),
     "true or false"),
    (("capture_notes", "argv", "ranges", "param_dtypes", "input_dtypes",
      "input_memory_formats"), is_str_list, "a list of strings"),
    (("versions", "autocast"), is_str_dict, "an object of strings"),
    (("clock",), is_clock, "an object with a name and ns figures"),
    (("fused_pairs",), is_pair_list, "a list of [name, name] pairs"),
    (("loop", "distributed", "call"), is_dict, "an object"),
) for k in keys)


def _is_stack(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, str) for v in value)


def _is_shape_text(value) -> bool:
    return value is None or isinstance(value, str) or value is pd.NA or (
        isinstance(value, float) and math.isnan(value))


#: Known nodes columns: each cell must pass the check. Unknown columns are carried through.
NODE_FIELDS = (
    Field("name", is_str, "a string"),
    Field("op", is_str, "a string"),
    Field("target", is_str, "a string"),
    Field("module_path", is_str, "a string"),
    Field("module_type", is_str, "a string"),
    Field("module_stack", _is_stack, "a list of strings"),
    Field("inputs", _is_stack, "a list of node names"),
    Field("communication", lambda v: isinstance(v, (bool, np.bool_)), "true or false"),
    Field("input_shapes", _is_shape_text, "a string"),
    Field("output_shapes", _is_shape_text, "a string"),
    *(Field(k, is_count, "a non-negative int64")
      for k in ("index", "flops", "out_bytes", "peak_bytes")),
)


@dataclass(frozen=True)
class ArrayField:
    """A packed int64 array of the document: its axes ("runs", "nodes") and lower bound."""

    key: str
    axes: tuple[str, ...]
    required: bool = True
    non_negative: bool = True


#: The packed arrays of a saved profile, in the order the Profile takes them.
ARRAY_FIELDS = (
    ArrayField("samples", ("runs", "nodes")),
    ArrayField("run_totals", ("runs",)),
    ArrayField("device_samples", ("runs", "nodes"), required=False),
    ArrayField("run_starts", ("runs",), required=False, non_negative=False),
    ArrayField("run_noise", ("runs", "noise"), required=False),  # since format version 2
    ArrayField("backward_samples", ("runs", "nodes"), required=False),  # training steps
)

#: Integer fields of the document itself.
HEADER_FIELDS = (
    Field("n_nodes", is_count, "a non-negative integer"),
    Field("n_runs", is_count, "a non-negative integer"),
)


# ---- checks ------------------------------------------------------------------------------------

def check_fields(values: dict, fields, where: str) -> None:
    """FormatError naming the first field of ``fields`` present in ``values`` that fails
    (NaN stands for unknown only in a field that takes fractions, never in a count).

    >>> check_fields({"runs": 2.5}, META_FIELDS, "meta")
    Traceback (most recent call last):
    ...
    pyfxprof.data.validate.FormatError: meta field 'runs' must be a non-negative int64, got 2.5
    """
    if not isinstance(values, dict):
        raise FormatError(f"{where} must be an object, got {values!r:.40}")
    for field in fields:
        value = values.get(field.key)
        nan = isinstance(value, float) and math.isnan(value)
        if value is None or (nan and field.check(0.5)) or field.check(value):
            continue
        raise FormatError(f"{where} field {field.key!r} must be {field.expected}, "
                          f"got {value!r:.40}")


def array_dtype(text) -> np.dtype:
    """The numpy dtype of a packed array's dtype string, only for plain numbers."""
    if not isinstance(text, str) or not ARRAY_DTYPE.match(text):
        raise FormatError(f"dtype {text!r:.40} is not a plain integer or float dtype")
    return np.dtype(text)


def array_shape(shape, ndim: int | None = None) -> tuple[int, ...]:
    """A packed array's shape: a list of non-negative ints (of ``ndim`` entries if given)."""
    if not isinstance(shape, list) or not all(is_count(n) for n in shape):
        raise FormatError(f"shape {shape!r:.40} is not a list of non-negative integers")
    if ndim is not None and len(shape) != ndim:
        raise FormatError(f"shape {shape} has {len(shape)} dimensions, expected {ndim}")
    return tuple(int(n) for n in shape)


def as_int64(array: np.ndarray, what: str, non_negative: bool) -> np.ndarray:
    """``array`` as int64 ns: integers only, each within MAX_NS of 0 and their sum within
    int64 (sums of them never wrap), no negatives if asked."""
    if array.dtype.kind not in "iu":
        raise FormatError(f"{what} must hold integer ns, got dtype {array.dtype}")
    if array.size and (array.max() > MAX_NS or (array.dtype.kind == "i" and array.min() < -MAX_NS)):
        raise FormatError(f"{what} holds values beyond {MAX_NS} ns (104 days)")
    array = array.astype(np.int64)
    if non_negative and array.size and array.min() < 0:
        raise FormatError(f"{what} holds negative durations ({int(array.min())} ns)")
    if array.size and float(np.abs(array).sum(dtype=np.float64)) >= 2**62:
        raise FormatError(f"{what} sums beyond int64")
    return array


def check_node_cells(nodes: pd.DataFrame) -> None:
    """Every known column's cells have the right type; node names are unique."""
    for field in NODE_FIELDS:
        if field.key not in nodes.columns:
            continue
        bad = [v for v in nodes[field.key].tolist() if not field.check(v)]
        if bad:
            raise FormatError(f"nodes column {field.key!r} must hold {field.expected} in "
                              f"every row, got {bad[0]!r:.40}")
    duplicated = nodes["name"][nodes["name"].duplicated()].tolist() if "name" in nodes else []
    if duplicated:
        raise FormatError(f"node name {duplicated[0]!r:.40} appears more than once")


#: The op of the row of the user's call outside the graph (data.outside_graph).
OUTSIDE_GRAPH_OP = "outside_graph"
#: Rows that are not the model's nodes: user ranges (not part of the run) and the time
#: outside every node (between graphs, outside a compiled model's kernels, the user's call
#: outside the graph).
NOT_NODES = ("range", "between_graphs", "outside_kernels", OUTSIDE_GRAPH_OP)
#: The name of a compiled model's row of the time outside its kernels (op "outside_kernels"),
#: and in a compiled diff the row of the time no eager node or kernel covers.
OUTSIDE_KERNELS = "(outside kernels)"


def model_nodes(nodes: pd.DataFrame) -> np.ndarray:
    """Mask of the model's own nodes (rows of NOT_NODES are not nodes; coverage is the
    nodes' share of the run)."""
    return (~nodes["op"].isin(NOT_NODES)).to_numpy(dtype=bool)


def run_coverage(samples: np.ndarray, run_totals: np.ndarray,
                 mask: np.ndarray | None = None) -> float:
    """Median over runs of (sum of node samples, of the columns `mask` keeps: no copy of
    them) / run total; 1.0 when a total is 0.

    >>> run_coverage(np.array([[40, 40], [50, 50]]), np.array([100, 200]))
    0.65
    >>> run_coverage(np.array([[40, 40, 9], [50, 50, 9]]), np.array([100, 200]),
    ...              np.array([True, True, False]))
    0.65
    """
    sums = samples.sum(axis=1) if mask is None else masked_row_sums(samples, mask)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = sums / run_totals
    return float(np.median(shares)) if np.isfinite(shares).all() else 1.0


def check_runs(samples: np.ndarray, run_totals: np.ndarray, meta: dict,
               mask: np.ndarray) -> None:
    """meta's run count is the samples' own, and no single node of the model takes longer
    than its whole run (beyond the calibrated overhead subtracted from the run total once
    per mark)."""
    if is_int(meta.get("runs")) and meta["runs"] != samples.shape[0]:
        raise FormatError(f"meta field 'runs' is {meta['runs']} but samples has "
                          f"{samples.shape[0]} runs")
    if not samples.size or not mask.any():
        return
    overhead = float(meta["overhead_ns"]) if is_ns(meta.get("overhead_ns")) else 0.0
    slack = min((2 * samples.shape[1] + 2) * (math.ceil(overhead) + 1), MAX_NS)
    longest = samples[:, mask].max(axis=1)
    bad = np.flatnonzero(longest > run_totals + slack)
    if bad.size:
        run = int(bad[0])
        raise FormatError(f"run {run}: a node took {int(longest[run])} ns but the whole run "
                          f"{int(run_totals[run])} ns (run totals inconsistent with samples)")


def recompute_derived(samples: np.ndarray, run_totals: np.ndarray, meta: dict,
                      mask: np.ndarray) -> None:
    """Replace the stored coverage (when there is one) by the one the samples give."""
    if "coverage" in meta:
        meta["coverage"] = (run_coverage(samples, run_totals, mask)
                            if samples.shape[0] else None)

