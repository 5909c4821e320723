"""Chrome / Perfetto trace export (Trace Event Format JSON, gzip when the name ends in .gz).

The trace reads like a Kineto (torch.profiler) trace, so Perfetto, chrome://tracing,
speedscope, Holistic Trace Analysis and torch-tb-profiler all open it:

- one ``ProfilerStep#N`` slice (cat ``user_annotation``) per exported run, N the loop step it was
  made in (as torch numbers its steps; the run's index outside a loop), on the host track,
  lasting exactly from its first node's start to its last node's end;
- inside it, one slice per module call level (cat ``python_function``, named by module path),
  bracketing the contiguous nodes under that module;
- inside those, one slice per node (cat ``cpu_op``; ``user_annotation`` for user ranges) with
  the node's columns as args, and Kineto's ``Input Dims`` / ``Input type`` lists;
- a device track with the same layout (cat ``gpu_user_annotation``) when the Profile has
  ``device_samples``;
- ``distributedInfo`` (rank and world size) at the top level; the process id is the rank.

Timeline (an approximation: the Profile keeps durations, not per-node timestamps): node i of
a run starts at the run start + the sum of the durations of nodes 0..i-1 + i x
``meta["overhead_ns"]`` (the calibrated cost of one mark, subtracted from the samples, added
back once per node boundary), rounded to whole ns. Device nodes are laid back to back from the
run start (launch latency is not recorded). Runs are placed at ``run_starts`` (relative to the
first exported run) when the Profile has them, else back to back; a run never starts before
the previous one ended on either track, so every slice nests strictly.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd

from ..data.persist import open_output
from ..data.profile import NODE_COLUMNS, Profile
from .trace_slices import input_dims, module_blocks

HOST_TID = 1
DEVICE_TID = 2
#: Median run at least this long (ns): the viewer shows ms, else ns (the only two choices).
MS_DISPLAY_FROM_NS = 100_000
_NODE_ARGS = ("op", "target", "module_path", "module_type")


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
    """Per node: op, target, module path and type, every known extra column value, and
    Kineto's ``Input Dims`` / ``Input type`` when the node has input shapes."""
    extra = [c for c in profile.nodes.columns if c not in NODE_COLUMNS]
    args = []
    for row in profile.nodes[list(_NODE_ARGS) + extra].itertuples(index=False):
        values = {k: _plain(v) for k, v in zip(_NODE_ARGS + tuple(extra), row)}
        node = {k: v for k, v in values.items() if v is not None}
        if isinstance(node.get("input_shapes"), str):
            node["Input Dims"], node["Input type"] = input_dims(node["input_shapes"])
        args.append(node)
    return args


def select_runs(profile: Profile, runs=None, max_runs: int | None = 100) -> np.ndarray:
    """Sorted unique run indices to export; more than ``max_runs`` keeps the first with a warning.

    >>> select_runs(prof, runs=[3, 1, 3])  # doctest: +SKIP
    array([1, 3])
    """
    chosen = np.arange(profile.n_runs) if runs is None else np.unique(np.asarray(list(runs)))
    valid = chosen.size == 0 or chosen.dtype.kind in "iu"
    if not valid or ((chosen < 0) | (chosen >= profile.n_runs)).any():
        raise ValueError(f"runs must be indices in 0..{profile.n_runs - 1}, got {runs!r}")
    if max_runs is not None and len(chosen) > max_runs:
        warnings.warn(f"exporting the first {max_runs} of {len(chosen)} runs to keep the trace "
                      f"viewable; pass runs=[...] or a larger max_runs", stacklevel=3)
        chosen = chosen[:max_runs]
    return chosen.astype(np.int64)


def _offsets(durations: np.ndarray, per_boundary: float) -> np.ndarray:
    """Start of each node relative to its run start, int64 ns, (runs, nodes)."""
    before = np.cumsum(durations, axis=1) - durations
    return np.rint(before + per_boundary * np.arange(durations.shape[1])).astype(np.int64)


def _ends(starts: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """End of each run's last node relative to its run start (0 for a run without nodes)."""
    return (starts + durations).max(axis=1, initial=0)


def timeline(profile: Profile, chosen: np.ndarray) -> dict:
    """Integer-ns layout of the ``chosen`` runs: run starts, node starts, per-track run ends.

    Keys: run_start (k,), host_start (k, n), host_end (k,), device_start (k, n) and
    device_end (k,) or None, origin (profiler-clock ns of time 0, or None without
    run_starts); see the module docstring. Runs never overlap: run k+1 starts at or after
    the end of run k on both tracks.
    """
    overhead = profile.meta.get("overhead_ns")
    overhead = float(overhead) if overhead is not None and math.isfinite(overhead) else 0.0
    host = profile.samples[chosen]
    host_start = _offsets(host, overhead)
    layout = {"host_start": host_start, "host_end": _ends(host_start, host),
              "device_start": None, "device_end": None, "origin": None}
    span = layout["host_end"]
    if profile.device_samples is not None:
        device = profile.device_samples[chosen]
        layout["device_start"] = _offsets(device, 0.0)
        layout["device_end"] = _ends(layout["device_start"], device)
        span = np.maximum(span, layout["device_end"])
    back_to_back = np.cumsum(span) - span
    if profile.run_starts is not None and len(chosen):
        layout["origin"] = int(profile.run_starts[chosen].min())
        wanted = profile.run_starts[chosen] - layout["origin"]
        layout["run_start"] = np.maximum.accumulate(wanted - back_to_back) + back_to_back
    else:
        layout["run_start"] = back_to_back
    return layout


def _complete(name: str, cat: str, where: tuple, ts_ns: int, dur_ns: int, args: dict) -> dict:
    pid, tid = where
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
            "ts": round(ts_ns / 1000.0, 3), "dur": round(dur_ns / 1000.0, 3), "args": args}


def _metadata_events(profile: Profile, pid: int, rank: int) -> list[dict]:
    meta = profile.meta
    threads = [(HOST_TID, "host")]
    if profile.device_samples is not None:
        threads.append((DEVICE_TID, f"device {meta.get('device', '?')}"))
    events = [{"name": "process_name", "ph": "M", "pid": pid,
               "args": {"name": f"pyfxprof {meta.get('model', '?')} (rank {rank})"}},
              {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": rank}}]
    for tid, name in threads:
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"sort_index": tid}})
    return events


def _track_events(profile, chosen, layout, track: str, where: tuple, node_args) -> list[dict]:
    """Per run: its step slice, its module slices and its node slices on one track."""
    device = track == "device"
    samples = profile.device_samples if device else profile.samples
    durations = samples[chosen]
    starts = layout["run_start"][:, None] + layout[f"{track}_start"]
    ends, names = starts + durations, profile.nodes["name"].tolist()
    blocks = module_blocks(profile.nodes)
    node_cat = ["gpu_user_annotation" if device else
                ("user_annotation" if a.get("op") == "range" else "cpu_op") for a in node_args]
    step_cat, step_name = (("gpu_user_annotation", "device step {}") if device
                           else ("user_annotation", "ProfilerStep#{}"))
    events, steps = [], profile.run_steps()
    for k, run in enumerate(chosen.tolist()):
        run_start = int(layout["run_start"][k])
        events.append(_complete(step_name.format(int(steps[run])), step_cat, where, run_start,
                                int(layout[f"{track}_end"][k]),
                                {"run": run, "run_total_ns": int(profile.run_totals[run])}))
        for block in blocks:
            first, last = block["first"], block["last"]
            events.append(_complete(block["path"], "python_function", where,
                                    int(starts[k, first]), int(ends[k, last] - starts[k, first]),
                                    {"module_type": block["type"], "level": block["level"]}))
        events.extend(_complete(name, cat, where, int(s), int(e - s), args) for name, cat, s, e,
                      args in zip(names, node_cat, starts[k], ends[k], node_args))
    return events


def _display_unit(profile: Profile) -> str:
    """"ms" for runs of MS_DISPLAY_FROM_NS or more (median), else "ns"."""
    if profile.n_runs == 0:
        return "ns"
    return "ms" if float(np.median(profile.run_totals)) >= MS_DISPLAY_FROM_NS else "ns"


def _backend(profile: Profile) -> str:
    """The torch.distributed backend recorded in the Profile's metadata, else "none"."""
    return str((profile.meta.get("distributed") or {}).get("backend") or "none")


def chrome_trace(profile: Profile, runs=None, max_runs: int | None = 100, rank: int = 0,
                 world_size: int = 1) -> dict:
    """The trace of one process as a dict: {"traceEvents": [...], "displayTimeUnit": ...,
    "distributedInfo": {"rank", "world_size"}, "otherData": {...}}. ``rank`` is also the pid,
    so the traces of several ranks can be merged into one file.

    >>> chrome_trace(prof, rank=1, world_size=4)["distributedInfo"]  # doctest: +SKIP
    {'backend': 'none', 'rank': 1, 'world_size': 4}
    """
    chosen = select_runs(profile, runs, max_runs)
    layout = timeline(profile, chosen)
    node_args = _node_args(profile)
    events = _track_events(profile, chosen, layout, "host", (rank, HOST_TID), node_args)
    if profile.device_samples is not None:
        events += _track_events(profile, chosen, layout, "device", (rank, DEVICE_TID), node_args)
    events.sort(key=lambda e: (e["tid"], e["ts"], -e["dur"]))  # parents first (stable sort)
    other = {key: _plain(profile.meta.get(key)) for key in ("model", "device", "overhead_ns")}
    other.update(producer="pyfxprof", runs_exported=chosen.tolist(), runs_total=profile.n_runs,
                 time_origin_ns=layout["origin"])
    return {"schemaVersion": 1,
            "distributedInfo": {"backend": _backend(profile), "rank": rank,
                                "world_size": world_size},
            "traceEvents": _metadata_events(profile, rank, rank) + events,
            "displayTimeUnit": _display_unit(profile), "otherData": other}


def export_chrome_trace(profile: Profile, path, runs=None, max_runs: int | None = 100,
                        rank: int = 0, world_size: int = 1) -> None:
    """Write a Chrome/Perfetto trace of ``profile`` to ``path`` (gzip when it ends in .gz).

    ``runs``: run indices to export (default all); at most ``max_runs`` are written (the first
    ones, with a warning; None for no cap). ``rank`` / ``world_size`` fill distributedInfo.
    Open the file in https://ui.perfetto.dev, chrome://tracing, HTA or TensorBoard.

    >>> export_chrome_trace(prof, "trace.json.gz", runs=range(10))  # doctest: +SKIP
    """
    trace = chrome_trace(profile, runs=runs, max_runs=max_runs, rank=rank,
                         world_size=world_size)
    text = json.dumps(trace, separators=(",", ": "), allow_nan=False)  # HTA finds "rank": N
    with open_output(path) as stream:
        stream.write(text)
