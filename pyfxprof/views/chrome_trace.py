"""Chrome / Perfetto trace export (Trace Event Format JSON, gzip when the name ends in .gz),
laid out like a Kineto (torch.profiler) trace so that Perfetto, chrome://tracing, speedscope,
Holistic Trace Analysis and torch-tb-profiler open it: ProfilerStep slices per run, module
levels, one slice per node named by its op (`data.op_names.op_name`), a device track
(``gpu_user_annotation``) when the Profile has ``device_samples``, ``distributedInfo``, and
for training steps a backward track with flow events (views/backward_trace.py). The layout
and its timeline (whole-µs starts, exact durations: docs/outputs.md, "Chrome / Perfetto
trace"): device nodes are laid out like host nodes from the run start (launch latency is not
recorded); runs are placed at ``run_starts`` (relative to the first exported run, rounded up
to a whole µs) when the Profile has them, else back to back, a run never starting before the
previous one ended on either track, so every slice nests strictly.
"""

from __future__ import annotations

import json
import math
import warnings
from typing import Any, Iterable, Iterator

import numpy as np
import pandas as pd

from ..data.files import PathLike
from ..data.persist import open_output
from ..data.profile import NODE_COLUMNS, Profile
from ..errors import ArgumentError, whole_number
from .backward_trace import backward_events
from ..data.op_names import op_names
from .trace_slices import input_dims, module_blocks

HOST_TID = 1
DEVICE_TID = 2
#: Median run at least this long (ns): the viewer shows ms, else ns (the only two choices).
MS_DISPLAY_FROM_NS = 100_000
#: Category of the zero-length step closing the trace: HTA reads steps by name whatever their
#: category; TensorBoard, which would count it as a step, ignores a category it does not know.
CLOSING_CAT = "trace_end"
_NODE_ARGS = ("name", "op", "target", "module_path", "module_type")


def _plain(value):
    """A cell as plain JSON data (tuples -> lists, numpy -> Python), None when missing."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    missing = value is None or value is pd.NA
    if missing or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _node_args(profile: Profile) -> list[dict]:
    """Per node: its name (as ``node``), op type, target, module path and type, every known extra
    column value (shapes, source, flops...), and Kineto's ``Input Dims`` / ``Input type`` when the
    node has input shapes."""
    keys = _NODE_ARGS + tuple(c for c in profile.nodes.columns if c not in NODE_COLUMNS)
    args, dims = [], {}
    for row in zip(*(profile.nodes[key].tolist() for key in keys)):
        values = {k: _plain(v) for k, v in zip(keys, row)}
        node = {("node" if k == "name" else k): v for k, v in values.items() if v is not None}
        shapes = node.get("input_shapes")
        if isinstance(shapes, str):
            if shapes not in dims:
                dims[shapes] = input_dims(shapes)
            node["Input Dims"], node["Input type"] = dims[shapes]
        args.append(node)
    return args


def select_runs(profile: Profile, runs=None, max_runs: int | None = 100) -> np.ndarray:
    """Sorted unique run indices to export; more than ``max_runs`` keeps the first with a warning.

    >>> select_runs(prof, runs=[3, 1, 3])  # doctest: +SKIP
    array([1, 3])
    """
    max_runs = whole_number("max_runs", max_runs, minimum=1, none=True)
    chosen = np.arange(profile.n_runs) if runs is None else np.unique(np.asarray(list(runs)))
    valid = chosen.size == 0 or chosen.dtype.kind in "iu"
    if not valid or ((chosen < 0) | (chosen >= profile.n_runs)).any():
        raise ArgumentError(f"runs must be indices in 0..{profile.n_runs - 1}, got {runs!r}")
    if max_runs is not None and len(chosen) > max_runs:
        warnings.warn(f"exporting the first {max_runs} of {len(chosen)} runs to keep the trace "
                      f"viewable; pass runs=[...] or a larger max_runs", stacklevel=3)
        chosen = chosen[:max_runs]
    return chosen.astype(np.int64)


def _whole_us(ns: np.ndarray) -> np.ndarray:
    """``ns`` rounded up to a whole µs, in ns."""
    return (-(-np.asarray(ns, dtype=np.int64) // 1000)) * 1000


def _offsets(durations: np.ndarray, per_boundary: float, whole_us: bool) -> np.ndarray:
    """Start of each node relative to its run start, int64 ns, (runs, nodes): after the previous
    nodes' durations and ``per_boundary`` per boundary; with ``whole_us``, each node on the
    first whole µs at or after the previous node's end + ``per_boundary``."""
    if whole_us:
        advance = _whole_us(np.ceil(durations + per_boundary))
        return np.cumsum(advance, axis=1) - advance
    before = np.cumsum(durations, axis=1) - durations
    return np.rint(before + per_boundary * np.arange(durations.shape[1])).astype(np.int64)


def _ends(starts: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """End of each run's last node relative to its run start (0 for a run without nodes)."""
    return (starts + durations).max(axis=1, initial=0)


def timeline(profile: Profile, chosen: np.ndarray, whole_us: bool = False) -> dict:
    """Integer-ns layout of the ``chosen`` runs: run starts, node starts, per-track run ends.

    Keys: run_start (k,), host_start (k, n), host_end (k,), device_start (k, n) and
    device_end (k,) or None, origin (profiler-clock ns of time 0, or None without
    run_starts); see the module docstring (``whole_us``: runs and nodes start on whole µs, as
    in the Chrome trace; else to the ns, as speedscope shows them). Runs never overlap: run
    k+1 starts at or after the end of run k on both tracks.
    """
    overhead = profile.meta.get("overhead_ns")
    overhead = float(overhead) if overhead is not None and math.isfinite(overhead) else 0.0
    grid = _whole_us if whole_us else np.asarray
    host = np.maximum(profile.samples[chosen], 0)
    host_start = _offsets(host, overhead, whole_us)
    layout: dict[str, Any] = {"host_start": host_start, "host_end": _ends(host_start, host),
                              "device_start": None, "device_end": None, "origin": None}
    span = layout["host_end"]
    if profile.device_samples is not None:
        device = np.maximum(profile.device_samples[chosen], 0)
        device_start = _offsets(device, 0.0, whole_us)
        layout["device_start"], layout["device_end"] = device_start, _ends(device_start, device)
        span = np.maximum(span, layout["device_end"])
    span = grid(span)
    back_to_back = np.cumsum(span) - span
    if profile.run_starts is not None and len(chosen):
        layout["origin"] = int(profile.run_starts[chosen].min())
        wanted = grid(profile.run_starts[chosen] - layout["origin"])
        layout["run_start"] = np.maximum.accumulate(wanted - back_to_back) + back_to_back
    else:
        layout["run_start"] = back_to_back
    return layout


def _event_head(name: str, cat: str, where: tuple) -> str:
    """The JSON text of a complete event up to its ``ts`` value."""
    return (f'{{"ph": "X", "cat": {json.dumps(cat)}, "name": {json.dumps(name)}, '
            f'"pid": {where[0]}, "tid": {where[1]}, "ts": ')


def _event_tail(args: dict) -> str:
    """The JSON text of a complete event after its ``dur`` value."""
    return f', "args": {json.dumps(args, allow_nan=False)}}}'


class _Events:
    """Complete events as parallel arrays (track, ts ns, dur ns, depth, template) plus one
    (head, tail) text template per distinct name/args, written in (track, ts, -dur, depth)
    order, parents first. Parents (depth below ``leaf_depth``: steps, module levels) are
    written half a ns longer than they last: readers add ts and dur in binary floating point,
    where a parent ending exactly with its last child could end an ulp before it (TensorBoard
    then drops the child)."""

    def __init__(self) -> None:
        self.columns: list[tuple] = []
        self.heads: list[str] = []
        self.tails: list[str] = []

    def template(self, name: str, cat: str, where: tuple, args: dict) -> int:
        self.heads.append(_event_head(name, cat, where))
        self.tails.append(_event_tail(args))
        return len(self.heads) - 1

    leaf_depth = 1 << 30

    def add(self, tid: int, ts, dur, depth: int, template) -> None:
        ts, dur, template = (a.ravel() for a in np.broadcast_arrays(
            np.asarray(ts, np.int64), np.asarray(dur, np.int64), np.asarray(template, np.int64)))
        self.columns.append((np.full(ts.size, tid), ts, dur, np.full(ts.size, depth), template))

    def pieces(self, chunk: int = 100_000) -> Iterator[str]:
        """The events' JSON texts in order, each after ",\\n", joined ``chunk`` events a piece:
        the numbers are made text by ``map(str)`` and the templates picked by index, and
        each piece is one join of them (no Python-level formatting per event)."""
        if not self.columns:
            return
        tid, ts, dur, depth, template = (np.concatenate(c) for c in zip(*self.columns))
        order = np.lexsort((depth, -dur, ts, tid))
        heads, tails = np.array(self.heads, dtype=object), np.array(self.tails, dtype=object)
        for start in range(0, order.size, chunk):
            part = order[start:start + chunk]
            picked, length = template[part], dur[part]
            flat: list[Any] = [',\n', None, None, ', "dur": ', None, None, None] * part.size
            flat[1::7] = heads[picked].tolist()
            flat[2::7] = map(str, (ts[part] // 1000).tolist())
            flat[4::7] = map(str, (length // 1000).tolist())
            parent = depth[part] < self.leaf_depth
            flat[5::7] = _FRACTIONS[length % 1000 + 1000 * parent].tolist()
            flat[6::7] = tails[picked].tolist()
            yield "".join(flat)


#: ".NNN" for each ns remainder of a µs duration, then the same with a 5 after (parents).
_FRACTIONS = np.array([f".{i:03d}" for i in range(1000)] + [f".{i:03d}5" for i in range(1000)],
                      dtype=object)


def _metadata_events(profile: Profile, pid: int, rank: int) -> list[dict]:
    """Process and thread names and sort order; each with ``"ts": 0`` as Kineto writes them (a
    missing ts would make HTA read every timestamp as a float and round it)."""
    meta = profile.meta
    threads = [(HOST_TID, "host")]
    if profile.device_samples is not None:
        threads.append((DEVICE_TID, f"device {meta.get('device', '?')}"))
    events = [{"name": "process_name", "ph": "M", "ts": 0, "pid": pid,
               "args": {"name": f"pyfxprof {meta.get('model', '?')} (rank {rank})"}},
              {"name": "process_sort_index", "ph": "M", "ts": 0, "pid": pid,
               "args": {"sort_index": rank}}]
    for tid, name in threads:
        events.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
                       "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
                       "args": {"sort_index": tid}})
    return events


def _track_events(profile, chosen, layout, track: str, where: tuple, events: _Events,
                  node_args) -> None:
    """Per run: its step slice, its module slices and its node slices on one track."""
    device = track == "device"
    samples = profile.device_samples if device else profile.samples
    durations = np.maximum(samples[chosen], 0)
    run_start = layout["run_start"]
    starts = run_start[:, None] + layout[f"{track}_start"]
    ends = starts + durations
    step_cat, step_name = (("gpu_user_annotation", "device step {}") if device
                           else ("user_annotation", "ProfilerStep#{}"))
    loop_steps = profile.run_steps()
    steps = [events.template(step_name.format(int(loop_steps[run])), step_cat, where,
                             {"run": run, "run_total_ns": int(profile.run_totals[run])})
             for run in chosen.tolist()]
    events.add(where[1], run_start, layout[f"{track}_end"], 0, steps)
    blocks = module_blocks(profile.nodes)
    for block in blocks:
        first, last = block["first"], block["last"]
        template = events.template(block["path"], "python_function", where,
                                   {"module_type": block["type"], "level": block["level"]})
        events.add(where[1], starts[:, first], ends[:, last] - starts[:, first],
                   1 + block["level"], template)
    names = op_names(profile.nodes)
    first = len(events.heads)
    for name, args in zip(names, node_args):
        cat = "gpu_user_annotation" if device else (
            "user_annotation" if args.get("op") == "range" else "cpu_op")
        events.template(name, cat, where, args)
    events.add(where[1], starts, durations, events.leaf_depth, first + np.arange(len(names)))
    if not device and len(chosen):
        closing = int(loop_steps[chosen].max()) + 1
        events.add(where[1], _whole_us(run_start[-1] + layout["host_end"][-1]), 0, 0,
                   events.template(f"ProfilerStep#{closing}", CLOSING_CAT, where,
                                   {"closes_trace": True}))


def _display_unit(profile: Profile) -> str:
    """"ms" for runs of MS_DISPLAY_FROM_NS or more (median), else "ns"."""
    if profile.n_runs == 0:
        return "ns"
    return "ms" if float(np.median(profile.run_totals)) >= MS_DISPLAY_FROM_NS else "ns"


def _backend(profile: Profile) -> str:
    """The torch.distributed backend recorded in the Profile's metadata, else "none"."""
    return str((profile.meta.get("distributed") or {}).get("backend") or "none")


def _trace_pieces(profile: Profile, runs, max_runs: int | None, rank: int,
                  world_size: int) -> Iterator[str]:
    """The pieces of :func:`trace_text`, in order (a large trace is never one string)."""
    world_size = whole_number("world_size", world_size, minimum=1)
    rank = whole_number("rank", rank)
    if rank >= world_size:
        raise ArgumentError(f"rank must be below world_size ({world_size}), got {rank}")
    chosen = select_runs(profile, runs, max_runs)
    layout = timeline(profile, chosen, whole_us=True)
    node_args = _node_args(profile)
    events = _Events()
    _track_events(profile, chosen, layout, "host", (rank, HOST_TID), events, node_args)
    if profile.device_samples is not None:
        _track_events(profile, chosen, layout, "device", (rank, DEVICE_TID), events, node_args)
    other = {key: _plain(profile.meta.get(key)) for key in ("model", "device", "overhead_ns")}
    other.update(producer="pyfxprof", runs_exported=chosen.tolist(), runs_total=profile.n_runs,
                 time_origin_ns=layout["origin"])
    top = {"schemaVersion": 1,
           "distributedInfo": {"backend": _backend(profile), "rank": rank,
                               "world_size": world_size},
           "displayTimeUnit": _display_unit(profile), "otherData": other}
    yield json.dumps(top, separators=(",", ": "), allow_nan=False)[:-1] + ',\n"traceEvents": [\n'
    yield ",\n".join(json.dumps(e) for e in _metadata_events(profile, rank, rank))  # never empty
    yield from events.pieces()
    for event in backward_events(profile, chosen, layout, rank):  # training steps
        yield ",\n" + json.dumps(event)
    yield "\n]}\n"


def trace_text(profile: Profile, runs=None, max_runs: int | None = 100, rank: int = 0,
               world_size: int = 1) -> str:
    """The trace of one process as JSON text (what `export_chrome_trace` writes, `chrome_trace`
    parsed), one event a line: top-level keys first (HTA finds ``"rank": N`` there), then
    ``traceEvents``, parents before children.

    >>> trace_text(prof).count("ProfilerStep#")  # doctest: +SKIP
    51
    """
    return "".join(_trace_pieces(profile, runs, max_runs, rank, world_size))


def chrome_trace(profile: Profile, runs=None, max_runs: int | None = 100, rank: int = 0,
                 world_size: int = 1) -> dict:
    """The trace of one process as a dict: {"traceEvents": [...], "displayTimeUnit": ...,
    "distributedInfo": {"rank", "world_size"}, "otherData": {...}}. ``rank`` is also the pid,
    so the traces of several ranks can be merged into one file.

    >>> chrome_trace(prof, rank=1, world_size=4)["distributedInfo"]  # doctest: +SKIP
    {'backend': 'none', 'rank': 1, 'world_size': 4}
    """
    return json.loads(trace_text(profile, runs, max_runs, rank, world_size))


def export_chrome_trace(profile: Profile, path: PathLike, runs: Iterable[int] | None = None,
                        max_runs: int | None = 100, rank: int = 0, world_size: int = 1, *,
                        use_python_export: bool = False) -> None:
    """Write a Chrome/Perfetto trace of ``profile`` to ``path`` (gzip when it ends in .gz);
    ``Profile.export_chrome_trace``. ``use_python_export`` is accepted (and has nothing to
    choose) so that ``torch.profiler.tensorboard_trace_handler(dir)`` works as ``on_trace_ready``.

    ``runs``: run indices to export (default all); at most ``max_runs`` are written (the first
    ones, with a warning; None for no cap). ``rank`` / ``world_size`` fill distributedInfo.
    Open the file in https://ui.perfetto.dev, chrome://tracing, HTA or TensorBoard.

    >>> export_chrome_trace(prof, "trace.json.gz", runs=range(10))  # doctest: +SKIP
    """
    pieces = _trace_pieces(profile, runs, max_runs, rank, world_size)
    first = next(pieces)  # bad arguments are refused before the file is opened
    with open_output(path) as stream:
        stream.write(first)
        for piece in pieces:
            stream.write(piece)
