"""The backward track of a training step's Chrome trace: one slice per node with backward time,
on its own track after the step's forward, each linked to its forward slice by a flow event."""

from __future__ import annotations

import numpy as np

from .trace_slices import op_names

#: Thread id of the backward track (host 1, device 2: views/chrome_trace.py).
BACKWARD_TID = 3


def backward_events(profile, chosen: np.ndarray, layout: dict, pid: int) -> list[dict]:
    """Trace events of the backward track for the ``chosen`` runs (none without backward
    samples). The Profile keeps each node's backward duration, not when it ran: a run's
    backward slices are laid back to back from the end of its forward, in reverse execution
    order (the order autograd runs them), the rows of no forward node (op "backward") first.
    Each slice gets a flow event ("s" on the forward slice, "f" on the backward one).

    Example:
        >>> backward_events(prof, np.arange(prof.n_runs), timeline(prof, ...), 0)  # doctest: +SKIP
    """
    if profile.backward_samples is None:
        return []
    names, ops = profile.nodes["name"].tolist(), profile.nodes["op"].tolist()
    labels = op_names(profile.nodes)  # slices are named by op, as on the forward track
    order = [i for i in range(len(names)) if ops[i] == "backward"] + [
        i for i in reversed(range(len(names))) if ops[i] != "backward"]
    events = [{"name": "thread_name", "ph": "M", "pid": pid, "tid": BACKWARD_TID,
               "args": {"name": "backward"}}]
    forward_start = layout["run_start"][:, None] + layout["host_start"]
    for k, run in enumerate(chosen.tolist()):
        at = int(layout["run_start"][k] + layout["host_end"][k])
        for i in order:
            duration = int(profile.backward_samples[run, i])
            if duration <= 0:
                continue
            events += _slice_and_flow((labels[i], names[i]), pid, at, duration,
                                      int(forward_start[k, i]), f"{run}:{i}", ops[i] != "backward")
            at += duration
    return events


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
