"""The profiled model of each live Profile, held by weak reference outside the Profile's data,
so `Profile.replay` finds the model while it lives and a Profile never keeps a model alive."""

from __future__ import annotations

import weakref
from typing import Any

#: id(profile) -> weak reference to the model it profiled; an entry leaves with its profile.
_LIVE: dict[int, weakref.ref] = {}


def remember_model(profile: Any, model: Any) -> Any:
    """Keep a weak reference to `model` for `profile` (returned as given).

    Example:
        >>> import torch
        >>> class P: pass
        >>> net, prof = torch.nn.ReLU(), P()
        >>> remember_model(prof, net) is prof and live_model(prof) is net
        True
    """
    try:
        reference = weakref.ref(model)
    except TypeError:  # an object without weak references (a builtin): nothing to find later
        return profile
    key = id(profile)
    _LIVE[key] = reference
    weakref.finalize(profile, _LIVE.pop, key, None)
    return profile


def live_model(profile: Any) -> Any:
    """The model `profile` was taken of while it is alive in this process, else None.

    Example:
        >>> class P: pass
        >>> live_model(P()) is None
        True
    """
    reference = _LIVE.get(id(profile))
    return None if reference is None else reference()
