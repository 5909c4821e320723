"""The backward track of a training step's Chrome trace: one slice per node with backward time,
on its own track, from where the backward ran when that was recorded, each linked to its forward
slice by a flow event."""

from __future__ import annotations

import numpy as np

from ..data.op_names import op_names

#: Thread id of the backward track (host 1, device 2: views/chrome_trace.py).
BACKWARD_TID = 3


def backward_events(profile, chosen: np.ndarray, layout: dict, pid: int) -> list[dict]:
    """Trace events of the backward track for the ``chosen`` runs (none without backward
    samples). The Profile keeps each node's backward duration and, in its metadata, where
    the backward began in each run (``meta["backward_starts_ns"]``: the backward graph's
    start, or the first autograd node's pre-hook) and the order the rows ran in
    (``meta["backward_order"]``): the slices are laid from that start in that order, the
    (autograd engine) slice ending there. Without them (the Profiler loop, profiles saved
    before), they are laid back to back from the end of the run's forward, in reverse
    execution order, the rows of no forward node (op "backward") first. Each slice gets a flow event ("s" on the forward slice, "f" on the
    backward one).

    Example:
        >>> backward_events(prof, np.arange(prof.n_runs), timeline(prof, ...), 0)  # doctest: +SKIP
    """
    if profile.backward_samples is None:
        return []
    names, ops = profile.nodes["name"].tolist(), profile.nodes["op"].tolist()
    labels = op_names(profile.nodes)  # slices are named by op, as on the forward track
    order, starts = _recorded_order(profile)
    events = [{"name": "thread_name", "ph": "M", "pid": pid, "tid": BACKWARD_TID,
               "args": {"name": "backward"}}]
    forward_start = layout["run_start"][:, None] + layout["host_start"]
    for k, run in enumerate(chosen.tolist()):
        at = int(layout["run_start"][k] + layout["host_end"][k])
        if starts is not None:
            at = max(at, int(layout["run_start"][k] + starts[run]
                             - profile.backward_samples[run, order[0]]))
        for i in order:
            duration = int(profile.backward_samples[run, i])
            if duration <= 0:
                continue
            events += _slice_and_flow((labels[i], names[i]), pid, at, duration,
                                      int(forward_start[k, i]), f"{run}:{i}", ops[i] != "backward")
            at += duration
    return events


def _recorded_order(profile) -> tuple[list[int], np.ndarray | None]:
    """(rows in the order the backward ran them, each run's backward graph start from the
    run start) as meta records them, or (the reverse-execution order, None) when it does
    not (the Profiler loop, a profile saved without them, or metadata that does not fit)."""
    ops, n = profile.nodes["op"].tolist(), len(profile.nodes)
    order, starts = profile.meta.get("backward_order"), profile.meta.get("backward_starts_ns")
    fits = (isinstance(order, list) and isinstance(starts, list) and len(starts) == profile.n_runs
            and sorted(set(order)) == sorted(order) and len(order) > 0
            and all(isinstance(i, int) and 0 <= i < n for i in order)
            and all(isinstance(s, int) for s in starts))
    if fits:
        return order, np.asarray(starts, np.int64)
    return [i for i in range(n) if ops[i] == "backward"] + [
        i for i in reversed(range(n)) if ops[i] != "backward"], None


def _slice_and_flow(label: tuple[str, str], pid: int, ts_ns: int, dur_ns: int, forward_ns: int,
                    flow_id: str, linked: bool) -> list[dict]:
    """A backward slice named "<op> (backward)" (`label`: op name, node name) and, when
    `linked`, the flow from the forward slice to it."""
    ts, dur = round(ts_ns / 1000.0, 3), round(dur_ns / 1000.0, 3)
    events = [{"ph": "X", "cat": "backward", "name": f"{label[0]} (backward)", "pid": pid,
               "tid": BACKWARD_TID, "ts": ts, "dur": dur, "args": {"node": label[1]}}]
    if linked:
        flow = {"cat": "fwdbwd", "name": "fwdbwd", "id": flow_id, "pid": pid}
        events += [dict(flow, ph="s", tid=1, ts=round(forward_ns / 1000.0, 3)),
                   dict(flow, ph="f", bp="e", tid=BACKWARD_TID, ts=ts)]
    return events
