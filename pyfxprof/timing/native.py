"""The one Python face of the native extension: every module reaches ``pyfxprof._C`` through
``from ..timing.native import _C`` (its surface is written down in pyfxprof/_C.pyi).

A missing or stale build is an ImportError that says how to build it, raised when a module that
times something is first imported (``import pyfxprof`` and loading a saved profile never need it).

Example:
    >>> from pyfxprof.timing.native import _C
    >>> _C.now_ns() > 0
    True
"""

from __future__ import annotations

import numpy as np

try:
    from .. import _C
except ImportError as error:
    raise ImportError(f"{error} (pyfxprof._C, the native extension, is not built for this "
                      "Python: run `pip install -e .` or `python setup.py build_ext --inplace` "
                      "in the source tree)") from error

#: The fields of a LoggedCalls row: run start and end (ns), call group, the Profiler's own
#: ns, the call's number, whether it is the block's first (0/1).
LOGGED_FIELDS = ("start", "end", "group", "own_ns", "call", "first")


def logged_rows(log) -> np.ndarray:
    """A ``_C.LoggedCalls``' rows, oldest first, as an int64 array (calls x LOGGED_FIELDS).

    Example:
        >>> log = _C.logged_calls(4); log.append(10, 20, 0, 3, 1, True)
        >>> logged_rows(log).tolist()
        [[10, 20, 0, 3, 1, 1]]
    """
    return np.frombuffer(log.rows(), dtype=np.int64).reshape(-1, len(LOGGED_FIELDS))


__all__ = ["LOGGED_FIELDS", "_C", "logged_rows"]
