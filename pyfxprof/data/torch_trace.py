"""Read torch.profiler Chrome traces into a Profile with one "node" per op name, one run per file.

A trace exported by ``torch.profiler.profile(...).export_chrome_trace(path)`` (or written by
``tensorboard_trace_handler``, optionally gzipped) holds ``traceEvents``. Complete events
(``"ph": "X"``) are aggregated by op name: per file, the number of events and the sum of their
durations (µs in the file, int64 ns here). The result is an ordinary :class:`Profile`, so it can
be shown with ``table()`` and compared with :func:`pyfxprof.analyses.diff.diff` by op name.

Example:
    >>> prof = load_trace("traces/")            # doctest: +SKIP
    >>> print(prof.table(top=10))               # doctest: +SKIP
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import PyfxprofError
from .files import read_maybe_gzipped
from .profile import Profile
from .validate import MAX_JSON_ELEMENTS, FormatError, parse_json

#: torch.profiler traces are one JSON object per event (~12 values each), so they may hold
#: more values than a saved profile.
MAX_TRACE_VALUES = 4 * MAX_JSON_ELEMENTS

#: File names a trace directory is searched for (tensorboard_trace_handler writes
#: ``*.pt.trace.json`` or, with use_gzip, ``*.pt.trace.json.gz``).
TRACE_PATTERNS = ("*.json", "*.json.gz")
#: Event categories that are not ops: "Trace" is the profiler's own session span.
SKIPPED_CATEGORIES = frozenset({"Trace"})
_STEP = re.compile(r"^(ProfilerStep)#\d+$")


def read_json(path) -> object:
    """The parsed JSON of a file, gunzipped first when it is gzip data.

    Raises PyfxprofError naming the path and the reason: missing, a directory, unreadable,
    truncated or corrupt gzip, or not JSON.

    >>> read_json("missing.json")
    Traceback (most recent call last):
    ...
    pyfxprof.errors.PyfxprofError: cannot read missing.json: no such file; check the path
    """
    raw = read_maybe_gzipped(Path(path), "cannot read")
    try:
        return parse_json(raw, allow_constants=True, max_elements=MAX_TRACE_VALUES)
    except FormatError as error:
        raise PyfxprofError(f"cannot read {path}: not JSON we can read ({error})") from None


def trace_files(path) -> list[Path]:
    """The trace files ``path`` names: the file itself, or a directory's traces sorted by name.

    >>> trace_files("nowhere")
    Traceback (most recent call last):
    ...
    pyfxprof.errors.PyfxprofError: cannot read nowhere: no such file or directory; check the path
    """
    path = Path(path)
    if not path.exists():
        raise PyfxprofError(f"cannot read {path}: no such file or directory; check the path")
    if not path.is_dir():
        return [path]
    files = sorted({f for pattern in TRACE_PATTERNS for f in path.glob(pattern) if f.is_file()})
    if not files:
        raise PyfxprofError(f"cannot read {path}: directory holds no torch.profiler trace "
                            f"files ({', '.join(TRACE_PATTERNS)})")
    return files


def _own_trace(data: dict) -> bool:
    """True for a trace written by pyfxprof's own export (views.chrome_trace)."""
    other = data.get("otherData")
    return isinstance(other, dict) and other.get("producer") == "pyfxprof"


def _rows(events: list, own: bool) -> list[tuple]:
    """(name, cat, ts, dur) of the op events: every complete event of a torch.profiler trace
    but its session span; only the node slices (cpu_op, user ranges) of a pyfxprof trace,
    whose steps, module slices and device track are not ops, named by their node (``args.node``;
    the slice name is the op, shared by many nodes). Old pyfxprof traces: "run N" events left
    out."""
    keep = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat, name = e.get("cat"), str(e.get("name"))
        if own and not (cat == "cpu_op" or (cat == "user_annotation"
                                              and not name.startswith("ProfilerStep#"))):
            continue
        if cat in SKIPPED_CATEGORIES or (cat == "run" and name.startswith("run ")):
            continue
        if own:
            args = e.get("args")
            name = str(args.get("node", name)) if isinstance(args, dict) else name
        keep.append((name if own else _STEP.sub(r"\1", name), str(cat or ""), e.get("ts"),
                     e.get("dur", 0)))
    return keep


def _step_starts(events: list) -> np.ndarray:
    """Sorted start times (µs) of the ProfilerStep#N slices of a trace (torch.profiler's
    schedule, or pyfxprof's runs)."""
    starts = [e.get("ts") for e in events if isinstance(e, dict) and e.get("ph") == "X"
              and _STEP.match(str(e.get("name", ""))) and e.get("cat") == "user_annotation"]
    return np.sort(pd.to_numeric(pd.Series(starts, dtype=object), errors="coerce").dropna()
                   .to_numpy(np.float64))


def _call_starts(frame: pd.DataFrame) -> np.ndarray:
    """Start times (µs) of the repeated calls of a trace without ProfilerStep slices: when
    its top-level events (those inside no other) are k > 1 copies of one sequence of names
    (``for _ in range(k): model(x)`` under the profiler), the start of each copy; else none.

    Example:
        >>> f = pd.DataFrame({"name": ["a", "b", "a", "b"], "ts": [0.0, 5, 10, 15],
        ...                   "dur": [4.0, 4, 4, 4]})
        >>> _call_starts(f).tolist()
        [0.0, 10.0]
    """
    names, starts, end = [], [], -np.inf
    for name, ts, dur in zip(frame["name"], frame["ts"], frame["dur"]):
        if ts >= end:
            names.append(name)
            starts.append(ts)
            end = ts + dur
    count = len(names)
    for period in range(1, count // 2 + 1):
        if count % period == 0 and names == names[:period] * (count // period):
            return np.array(starts[::period], dtype=np.float64)
    return np.zeros(0)


def _complete_events(data, path) -> pd.DataFrame:
    """Columns name, cat, ts, dur (µs, float) and step (the run within the file: its
    ProfilerStep slice, else its repeated model call, else 0) of the op events of one trace,
    in start order."""
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise PyfxprofError(f"cannot read {path}: no traceEvents list; expected a torch.profiler "
                            "Chrome trace (export_chrome_trace)")
    own = _own_trace(data)
    frame = pd.DataFrame(_rows(events, own), columns=["name", "cat", "ts", "dur"])
    frame["ts"] = pd.to_numeric(frame["ts"], errors="coerce")
    frame["dur"] = pd.to_numeric(frame["dur"], errors="coerce").fillna(0.0)
    frame = frame.dropna(subset=["ts"])
    if frame.empty:
        raise PyfxprofError(f"cannot read {path}: no complete (\"ph\": \"X\") op events to "
                            "aggregate; was the profiler active?")
    frame = frame.sort_values("ts", kind="stable")
    steps = _step_starts(events)
    if not steps.size and not own:
        steps = _call_starts(frame)
    where = np.searchsorted(steps, frame["ts"].to_numpy(), side="right") - 1
    frame["step"] = np.clip(where, 0, None) if steps.size else 0
    return frame


def _span_ns(frame: pd.DataFrame) -> int:
    """Wall time from the first event start to the last event end, in ns."""
    end = (frame["ts"] + frame["dur"]).max()
    return int(np.rint((end - frame["ts"].min()) * 1000.0))


def profile_from_traces(traces, name: str) -> Profile:
    """A Profile of parsed traces ``[(path, data), ...]``: one node per op name, one run per
    ``ProfilerStep#N`` slice of each file (torch.profiler's schedule, pyfxprof's own traces),
    else per repeated call of the model in it (see _call_starts), else per file.

    Node columns: ``name`` and ``target`` = op name (``ProfilerStep#N`` becomes
    ``ProfilerStep``), ``op`` = event category of its first event (``cpu_op``, ``kernel``, …),
    ``module_path`` / ``module_type`` = "", ``module_stack`` = (), and ``calls`` = events per
    run (float, mean over runs). ``meta["device"]`` is "cuda" when a trace lists
    ``deviceProperties``, else "cpu". ``samples[r, i]`` = summed duration (inclusive, ns) of op
    i in run r; ``run_totals[r]`` = first event start to last event end of run r (ns).
    """
    frames = [_complete_events(data, path) for path, data in traces]
    events = pd.concat(frames, keys=range(len(frames)), names=["file", None]).reset_index("file")
    run_codes = np.unique(events[["file", "step"]].to_numpy(dtype=np.int64), axis=0,
                          return_inverse=True)[1].ravel()
    codes, names = pd.factorize(events["name"])
    n_runs = int(run_codes.max()) + 1
    samples = np.zeros((n_runs, len(names)), dtype=np.int64)
    calls = np.zeros(len(names), dtype=np.float64)
    np.add.at(samples, (run_codes, codes),
              np.rint(events["dur"].to_numpy() * 1000.0).astype(np.int64))
    np.add.at(calls, codes, 1.0)
    first_cat = events.groupby(codes, sort=True)["cat"].first().to_numpy()
    nodes = pd.DataFrame({
        "index": np.arange(len(names)), "name": list(names), "op": first_cat,
        "target": list(names), "module_path": "", "module_type": "",
        "module_stack": [()] * len(names), "calls": calls / n_runs,
    })
    device = "cuda" if any(isinstance(data, dict) and data.get("deviceProperties")
                           for _, data in traces) else "cpu"
    meta = {"model": name, "device": device, "source": "torch.profiler trace", "runs": n_runs,
            "trace_files": [str(path) for path, _ in traces]}
    totals = [_span_ns(run) for _, run in events.groupby(run_codes, sort=True)]
    return Profile(nodes, samples, np.array(totals, dtype=np.int64), meta)


def load_trace(path) -> Profile:
    """Aggregate a torch.profiler Chrome trace file (JSON, optionally gzipped) or a directory
    of them (``*.json``, ``*.json.gz``; one run per file) into a Profile by op name.

    See :func:`profile_from_traces` for the columns. Unreadable input raises PyfxprofError
    naming the path and the reason.

    >>> prof = load_trace("trace.pt.trace.json")          # doctest: +SKIP
    >>> prof.to_dataframe()[["name", "calls", "median"]]  # doctest: +SKIP
    """
    files = trace_files(path)
    return profile_from_traces([(f, read_json(f)) for f in files], Path(path).name or str(path))
