"""Several profiles of one model, saved in separate sessions, as one Profile whose runs know
their session (meta["sessions"]): one side of a diff between sessions.

Example:
    >>> merged = merge_sessions([prof_a1, prof_a2])          # doctest: +SKIP
    >>> merged.meta["sessions"][:3], merged.n_runs           # doctest: +SKIP
    ([0, 0, 0], 100)
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .profile import Profile
from .run_noise import preempted_mask

_IDENTITY = ["name", "module_path"]


def merge_sessions(profiles: list[Profile]) -> Profile:
    """One Profile of the runs of ``profiles`` (the same nodes in the same order), with
    meta["sessions"] the index of each run's profile; meta is the first profile's.

    >>> import pandas as pd
    >>> nodes = pd.DataFrame({"index": [0], "name": ["a"], "op": ["call_function"],
    ...     "target": ["f"], "module_path": [""], "module_type": ["M"], "module_stack": [()]})
    >>> one = Profile(nodes, np.array([[5], [6]]), np.array([7, 8]))
    >>> merge_sessions([one, one]).meta["sessions"]
    [0, 0, 1, 1]
    """
    if len(profiles) == 1:
        return profiles[0]
    first = profiles[0]
    for number, other in enumerate(profiles[1:], start=2):
        if not first.nodes[_IDENTITY].equals(other.nodes[_IDENTITY]):
            raise ArgumentError(f"profile {number} of one side has other nodes than the first: "
                                "profiles of one side must be of the same model and inputs")
    meta = {key: value for key, value in first.meta.items() if key != "ab"}
    meta["sessions"] = [index for index, p in enumerate(profiles) for _ in range(p.n_runs)]
    return stacked_runs(profiles, meta, ("backward_samples",))


def stacked_runs(profiles: list[Profile], meta: dict, extras: tuple[str, ...] = (
        "device_samples", "backward_samples", "run_noise")) -> Profile:
    """One Profile of the runs of ``profiles`` (the same nodes), in order, with ``meta``;
    each array named in ``extras`` stacked too where every profile has it.

    >>> import pandas as pd
    >>> nodes = pd.DataFrame({"index": [0], "name": ["a"], "op": ["call_function"],
    ...     "target": ["f"], "module_path": [""], "module_type": ["M"], "module_stack": [()]})
    >>> one = Profile(nodes, np.array([[5], [6]]), np.array([7, 8]))
    >>> stacked_runs([one, one], {}).samples[:, 0].tolist()
    [5, 6, 5, 6]
    """
    def stacked(name: str) -> np.ndarray | None:
        arrays = [getattr(p, name) for p in profiles]
        return None if name not in extras or any(a is None for a in arrays) else np.vstack(arrays)

    return Profile(profiles[0].nodes, np.vstack([p.samples for p in profiles]),
                   np.concatenate([p.run_totals for p in profiles]), meta,
                   device_samples=stacked("device_samples"),
                   backward_samples=stacked("backward_samples"), run_noise=stacked("run_noise"))


def run_groups(meta: dict, n_runs: int, run_noise: np.ndarray | None = None) -> np.ndarray:
    """Each run's block (an interleaved run: meta["ab"]["blocks"]; -1 for a run preempted
    (data.run_noise) when its block has a run that was not) or session (several profiles
    merged: meta["sessions"]), else 0 for all.

    >>> run_groups({"sessions": [0, 0, 1]}, 3).tolist(), run_groups({}, 2).tolist()
    ([0, 0, 1], [0, 0])
    >>> noise = np.array([[0, 0, 90, 100], [2, 0, 10, 100], [2, 0, 10, 100]])
    >>> run_groups({"ab": {"blocks": [0, 0, 1]}}, 3, noise).tolist()
    [0, -1, 1]
    """
    groups = (meta.get("ab") or {}).get("blocks") or meta.get("sessions")
    if groups is None or len(groups) != n_runs:
        return np.zeros(n_runs, dtype=np.int64)
    groups = np.asarray(groups, dtype=np.int64)
    if meta.get("ab") and run_noise is not None:
        preempted = preempted_mask(run_noise)
        clean = np.unique(groups[~preempted])
        groups = np.where(preempted & np.isin(groups, clean), -1, groups)
    return groups
