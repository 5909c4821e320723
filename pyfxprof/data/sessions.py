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
    backward = [p.backward_samples for p in profiles]
    meta = {key: value for key, value in first.meta.items() if key != "ab"}
    meta["sessions"] = [index for index, p in enumerate(profiles) for _ in range(p.n_runs)]
    return Profile(first.nodes, np.vstack([p.samples for p in profiles]),
                   np.concatenate([p.run_totals for p in profiles]), meta,
                   backward_samples=None if any(b is None for b in backward)
                   else np.vstack([b for b in backward if b is not None]))
