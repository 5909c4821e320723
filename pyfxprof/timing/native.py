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

try:
    from .. import _C
except ImportError as error:
    raise ImportError(f"{error} (pyfxprof._C, the native extension, is not built for this "
                      "Python: run `pip install -e .` or `python setup.py build_ext --inplace` "
                      "in the source tree)") from error

__all__ = ["_C"]
