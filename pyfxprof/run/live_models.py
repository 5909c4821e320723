"""The profiled model of each live Profile, held by weak reference outside the Profile's data
(run/runner.py's remember_model writes it; a replay reads it with live_model)."""

from __future__ import annotations

import weakref
from typing import Any

#: id(profile) -> weak reference to the model it was taken of; an entry leaves with its
#: profile (a Profile never keeps a model alive).
_LIVE: dict[int, weakref.ref] = {}


def live_model(profile: Any) -> Any:
    """The model `profile` was taken of while it is alive in this process, else None.

    Example:
        >>> class P: pass
        >>> live_model(P()) is None
        True
    """
    reference = _LIVE.get(id(profile))
    return None if reference is None else reference()
