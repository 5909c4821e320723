"""Chrome / Perfetto trace export (Trace Event Format JSON, gzip when the name ends in .gz).

One complete event ("ph": "X") per node per run on a host track, nested inside a "run N"
event; a device track with the same layout when the Profile has ``device_samples``.

Timeline (an approximation: the Profile keeps durations, not per-node timestamps): node i of
a run starts at the run start + the sum of the durations of nodes 0..i-1 + i x
``meta["overhead_ns"]`` (the calibrated cost of one mark, subtracted from the samples, added
back once per node boundary), rounded to whole ns. Device nodes are laid back to back from the
run start (launch latency is not recorded). A run event lasts max(run total, end of its last
host or device node), so every node event nests inside it. Runs are placed at
``run_starts`` (relative to the first exported run) when the Profile has them, else back to
back in the order exported.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd

from ..data.persist import open_output
from ..data.profile import NODE_COLUMNS, Profile

PID = 1
HOST_TID = 1
DEVICE_TID = 2
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
    """Per node: op, target, module path and type, then every known extra column value."""
    extra = [c for c in profile.nodes.columns if c not in NODE_COLUMNS]
    args = []
    for row in profile.nodes[list(_NODE_ARGS) + extra].itertuples(index=False):
        values = {k: _plain(v) for k, v in zip(_NODE_ARGS + tuple(extra), row)}
        args.append({k: v for k, v in values.items() if v is not None})
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


def timeline(profile: Profile, chosen: np.ndarray) -> dict:
    """Integer-ns layout of the ``chosen`` runs: run starts and durations, node starts.

    Keys: run_start (k,), run_dur (k,), host_start (k, n), device_start (k, n) or None,
    origin (profiler-clock ns of time 0, or None without run_starts); see the module docstring.
    """
    overhead = profile.meta.get("overhead_ns")
    overhead = float(overhead) if overhead is not None and math.isfinite(overhead) else 0.0
    host = profile.samples[chosen]
    host_start = _offsets(host, overhead)
    ends = [profile.run_totals[chosen], (host_start + host).max(axis=1, initial=0)]
    device_start = None
    if profile.device_samples is not None:
        device = profile.device_samples[chosen]
        device_start = _offsets(device, 0.0)
        ends.append((device_start + device).max(axis=1, initial=0))
    run_dur = np.maximum.reduce(ends)
    origin = None
    if profile.run_starts is not None and len(chosen):
        origin = int(profile.run_starts[chosen].min())
        run_start = profile.run_starts[chosen] - origin
    else:
        run_start = np.cumsum(run_dur) - run_dur
    return {"run_start": run_start, "run_dur": run_dur, "host_start": host_start,
            "device_start": device_start, "origin": origin}


def _us(ns: np.ndarray) -> list:
    """Integer ns as µs floats with ns precision (3 decimals), as nested Python lists."""
    return np.round(np.asarray(ns, dtype=np.float64) / 1000.0, 3).tolist()


def _complete(name: str, cat: str, tid: int, ts_us: float, dur_us: float, args: dict) -> dict:
    return {"name": name, "cat": cat, "ph": "X", "ts": ts_us, "dur": dur_us,
            "pid": PID, "tid": tid, "args": args}


def _metadata_events(profile: Profile) -> list[dict]:
    meta = profile.meta
    threads = [(HOST_TID, "host")]
    if profile.device_samples is not None:
        threads.append((DEVICE_TID, f"device {meta.get('device', '?')}"))
    events = [{"name": "process_name", "ph": "M", "pid": PID,
               "args": {"name": f"pyfxprof {meta.get('model', '?')}"}}]
    for tid, name in threads:
        events.append({"name": "thread_name", "ph": "M", "pid": PID, "tid": tid,
                       "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": PID, "tid": tid,
                       "args": {"sort_index": tid}})
    return events


def _track_events(profile, chosen, layout, tid, starts, durations, node_args) -> list[dict]:
    """The run events and, nested inside each, its node events on one track."""
    names = profile.nodes["name"].tolist()
    cats = [args.get("op", "node") for args in node_args]
    run_ts, run_dur = _us(layout["run_start"]), _us(layout["run_dur"])
    node_ts = _us(layout["run_start"][:, None] + starts)
    node_dur = _us(durations)
    events = []
    for k, run in enumerate(chosen.tolist()):
        events.append(_complete(f"run {run}", "run", tid, run_ts[k], run_dur[k],
                                {"run": run, "run_total_ns": int(profile.run_totals[run])}))
        events.extend(_complete(name, cat, tid, ts, dur, args) for name, cat, ts, dur, args
                      in zip(names, cats, node_ts[k], node_dur[k], node_args))
    return events


def chrome_trace(profile: Profile, runs=None, max_runs: int | None = 100) -> dict:
    """The trace as a dict: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}."""
    chosen = select_runs(profile, runs, max_runs)
    layout = timeline(profile, chosen)
    node_args = _node_args(profile)
    events = _metadata_events(profile)
    events += _track_events(profile, chosen, layout, HOST_TID, layout["host_start"],
                            profile.samples[chosen], node_args)
    if profile.device_samples is not None:
        events += _track_events(profile, chosen, layout, DEVICE_TID, layout["device_start"],
                                profile.device_samples[chosen], node_args)
    other = {key: _plain(profile.meta.get(key)) for key in ("model", "device", "overhead_ns")}
    other.update(runs_exported=chosen.tolist(), runs_total=profile.n_runs,
                 time_origin_ns=layout["origin"])
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def export_chrome_trace(profile: Profile, path, runs=None, max_runs: int | None = 100) -> None:
    """Write a Chrome/Perfetto trace of ``profile`` to ``path`` (gzip when it ends in .gz).

    ``runs``: run indices to export (default all); at most ``max_runs`` are written (the first
    ones, with a warning; None for no cap). Open the file in https://ui.perfetto.dev or
    chrome://tracing.

    >>> export_chrome_trace(prof, "trace.json.gz", runs=range(10))  # doctest: +SKIP
    """
    trace = chrome_trace(profile, runs=runs, max_runs=max_runs)
    text = json.dumps(trace, separators=(",", ":"), allow_nan=False)
    with open_output(path) as stream:
        stream.write(text)
