"""Wall-clock timing of Python calls, shared by bench's baselines, tools/overhead.py and the
fusion benchmark: one loop timing calls on a clock, and one pause of the cyclic GC."""

from __future__ import annotations

import contextlib
import gc
import time
from typing import Any, Callable, Iterator

import numpy as np


@contextlib.contextmanager
def gc_paused(collect: bool = False) -> Iterator[None]:
    """Python's cyclic garbage collector paused inside (restored as it was after), as
    timeit, and so torch.utils.benchmark, pause it around timed work: a collection that a
    timed call's allocations trigger would land in that call. `collect`: collect once first,
    so that the pause starts with no garbage pending.

    Example:
        >>> with gc_paused(collect=True):
        ...     gc.isenabled()
        False
    """
    enabled = gc.isenabled()
    if collect:
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def timed_calls(fn: Callable, args: tuple = (), kwargs: dict[str, Any] | None = None,
                calls: int = 1, clock: Callable[[], float] = time.perf_counter_ns,
                per_call: bool = True) -> np.ndarray:
    """`calls` back-to-back calls of `fn(*args, **kwargs)`, timed on `clock` (in its own
    unit, uncorrected): each call's time (`per_call`), else one time around all of them.

    Example:
        >>> timed_calls(abs, (-1,), calls=3).shape, timed_calls(abs, (-1,), calls=3,
        ...                                                     per_call=False).shape
        ((3,), (1,))
        >>> bool((timed_calls(sum, ([1, 2],), calls=5) >= 0).all())
        True
    """
    kwargs = kwargs or {}
    if not per_call:
        start = clock()
        for _ in range(calls):
            fn(*args, **kwargs)
        return np.asarray([clock() - start])
    times = []
    for _ in range(calls):
        start = clock()
        fn(*args, **kwargs)
        times.append(clock() - start)
    return np.asarray(times)
