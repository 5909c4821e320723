"""speedscope export: the file format of https://www.speedscope.app (JSON; gzip with .gz).

One file, frames shared, two views of the same nodes (speedscope's profile menu switches):

1. **evented**, ``run K (median run)``: the host timeline of one measured run, by default the
   run whose total is the median (the lower one for an even count), laid out as in the Chrome
   trace (``views.chrome_trace.timeline``: a node starts after the previous nodes' durations
   and one calibrated mark cost per node boundary). Each node opens its module frames
   (outermost first, kept open while the next nodes stay in them) and its own frame. Real
   durations of one run: a timeline, as the run happened, noise included.
2. **sampled**, ``per-node median over N runs``: one sample per node (its stack) weighted by
   a per-node statistic (``metric``, default median), the numbers of the table and the flame
   graph; speedscope lays the samples end to end, a synthetic run of medians.

With device samples (GPU profiles), a third, evented profile holds the same run's device track.
Stacks are those of the folded stacks (``views.stacks``) without their ``root``: module paths,
then the node's name (a module call is its module's frame). Values are integer ns.
"""

from __future__ import annotations

import json

import numpy as np

from ..data.files import PathLike, open_output
from ..data.profile import Profile
from ..errors import PyfxprofError
from .chrome_trace import timeline
from .stacks import stack_weights

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def median_run(profile: Profile) -> int:
    """Index of the run whose total is the median (the lower median for an even count; the
    first such run on ties).

    >>> median_run(prof)   # doctest: +SKIP
    4
    """
    order = np.argsort(profile.run_totals, kind="stable")
    return int(order[(profile.n_runs - 1) // 2])


def speedscope_document(profile: Profile, run: int | None = None,
                        metric: str = "median") -> dict:
    """The speedscope file as a dict (see the module docstring); ``run`` picks the evented
    profile's run (default: the median run), ``metric`` the sampled profile's weights.

    >>> doc = speedscope_document(prof)   # doctest: +SKIP
    >>> [p["type"] for p in doc["profiles"]]   # doctest: +SKIP
    ['evented', 'sampled']
    """
    if profile.n_runs == 0:
        raise PyfxprofError("this profile has no runs: there is nothing to export to speedscope")
    if run is None:
        run = median_run(profile)
    if not isinstance(run, (int, np.integer)) or not 0 <= run < profile.n_runs:
        raise PyfxprofError(f"run must be a run index in 0..{profile.n_runs - 1}, got {run!r}")
    stacks = [(frames[1:], weight) for frames, weight in stack_weights(profile, metric)]
    frames: dict[str, int] = {}
    indexed = [[frames.setdefault(name, len(frames)) for name in stack] for stack, _ in stacks]
    layout = timeline(profile, np.array([run], dtype=np.int64))
    label = "median run" if run == median_run(profile) else "chosen run"
    profiles = [_evented(f"host, run {run} ({label})", indexed, layout["host_start"][0],
                         profile.samples[run])]
    if profile.device_samples is not None:
        profiles.append(_evented(f"device, run {run}", indexed, layout["device_start"][0],
                                 profile.device_samples[run]))
    weights = [int(weight) for _, weight in stacks]
    profiles.append({"type": "sampled", "name": f"per-node {metric} over {profile.n_runs} runs",
                     "unit": "nanoseconds", "startValue": 0, "endValue": int(sum(weights)),
                     "samples": indexed, "weights": weights})
    return {"$schema": SCHEMA, "shared": {"frames": [{"name": name} for name in frames]},
            "profiles": profiles, "name": str(profile.meta.get("model", "pyfxprof profile")),
            "activeProfileIndex": 0, "exporter": _exporter(profile)}


def _evented(name: str, stacks: list[list[int]], starts: np.ndarray,
             durations: np.ndarray) -> dict:
    """An evented profile: per node, open the module frames it enters and its own frame at
    its start, close its own frame at its end; module frames close when the next node leaves
    them (at the end of their last node)."""
    events: list[dict] = []
    open_frames: list[int] = []
    last_end = 0
    for stack, start, duration in zip(stacks, starts.tolist(), durations.tolist()):
        parents, end = stack[:-1], start + duration
        shared = 0
        while shared < min(len(open_frames), len(parents)) and \
                open_frames[shared] == parents[shared]:
            shared += 1
        events += [{"type": "C", "at": last_end, "frame": f} for f in open_frames[shared:][::-1]]
        open_frames = parents[:]
        events += [{"type": "O", "at": start, "frame": f} for f in parents[shared:]]
        events += [{"type": "O", "at": start, "frame": stack[-1]},
                   {"type": "C", "at": end, "frame": stack[-1]}]
        last_end = end
    events += [{"type": "C", "at": last_end, "frame": f} for f in open_frames[::-1]]
    return {"type": "evented", "name": name, "unit": "nanoseconds", "startValue": 0,
            "endValue": int(last_end), "events": events}


def _exporter(profile: Profile) -> str:
    version = (profile.meta.get("versions") or {}).get("pyfxprof")
    return f"pyfxprof@{version}" if version else "pyfxprof"


def export_speedscope(profile: Profile, path: PathLike, run: int | None = None,
                      metric: str = "median") -> None:
    """Write ``profile`` as a speedscope file (see speedscope_document) to ``path``.

    Open it at https://www.speedscope.app (drop the file) or with ``speedscope FILE`` (npm).

    >>> export_speedscope(prof, "prof.speedscope.json")   # doctest: +SKIP
    """
    document = speedscope_document(profile, run=run, metric=metric)
    with open_output(path) as stream:
        json.dump(document, stream, separators=(",", ":"))
