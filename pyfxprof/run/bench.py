"""pyfxprof.bench() and bench_grid(): microbenchmarks of any callable (an op, a function, a
module, a lambda), each call timed natively, blocks of calls added until the median's 95%
interval reaches a target or a time budget is spent (run/bench_session.py). docs/bench.md."""

from __future__ import annotations

import contextlib
import inspect
import itertools
from typing import Any, Callable, Iterator

import torch
import torch.fx as fx

from ..capture.tracing import timed_nodes
from ..data.bench_compare import BenchGrid
from ..data.measurement import Measurement
from ..errors import ArgumentError, PyfxprofError, whole_number
from .bench_session import BenchSession, rng_kept
from .bench_timers import BASELINE_CHOICES

#: bench_grid's parameter that sets torch's thread count instead of reaching the function.
THREADS_PARAM = "threads"
#: Timed runs and untimed warm-up runs of the per-node profile of an fx-traceable function.
PROFILE_RUNS, PROFILE_WARMUP = 30, 5
#: bench()'s own options, which bench_grid and bench_cells pass on.
OPTIONS = ("target", "budget", "baseline", "device_events", "profile")


def bench(fn: Callable, *args: Any, target: float = 0.01, budget: float = 2.0,
          baseline: str | None = None, threads: int | None = None,
          device_events: bool | None = None, profile: bool | None = None,
          label: str | None = None, params: dict | None = None,
          **kwargs: Any) -> Measurement:
    """Time `fn(*args, **kwargs)` call by call on pyfxprof's native clock until the median's
    95% interval is within ±`target` (a fraction) or `budget` seconds of timed calls are spent.

    Calls run in blocks of back-to-back calls (about 0.5 ms, at most 500 calls), timed on
    the native clock as a whole (the median and its interval: of the blocks' time per call,
    each result's release included) and call by call (`call_median`), with the calibrated
    cost of the timer subtracted, as profile() times a node. Leading blocks slower than the
    rest are detected as warm-up and left out. `fn` runs as given (grad mode, module mode
    untouched); torch's random number generators are left as they were.

    Args:
        baseline: "perf_counter" also times the same calls with time.perf_counter() and
            time.time() around each call and around each block, blocks taking turns.
        threads: torch's intra-op threads while timing (default: as set now).
        device_events: also time each call with CUDA events (default: on for CUDA tensors).
        profile: the per-node Profile of an fx-traceable function or a module as
            `Measurement.profile` (default: when it traces into 2 nodes or more).
        label, params: how the Measurement is named, and its grid cell.
        Keyword arguments of bench's own names reach `fn` through functools.partial.

    Example:
        >>> m = bench(torch.add, torch.ones(1000), torch.ones(1000), budget=0.2)
        >>> m.median > 0 and m.calls > 0
        True
    """
    options = dict(target=target, budget=budget, baseline=baseline,
                   device_events=device_events, profile=profile)
    cell = (fn, args, kwargs, threads, label, params or {})
    return bench_cells([cell], **options).measurements[0]


def bench_cells(cells: list[tuple], **options: Any) -> BenchGrid:
    """bench() of several callables at once, their rounds of blocks taking turns (so a drift
    of the machine reaches every cell alike), as one BenchGrid. Each cell is (fn, args, kwargs,
    threads, label or None, params); `options` are bench()'s (OPTIONS).

    Example:
        >>> cells = [(torch.neg, (torch.ones(n),), {}, None, None, {"n": n}) for n in (1, 9)]
        >>> [m.params for m in bench_cells(cells, budget=0.05).measurements]
        [{'n': 1}, {'n': 9}]
    """
    _check_options(options)
    sessions = []
    with rng_kept():
        for fn, args, kwargs, threads, label, params in cells:
            _check_callable(fn, threads)
            with thread_count(threads):
                sessions.append((threads, BenchSession(fn, tuple(args), dict(kwargs),
                                                       label or _label_of(fn), params, options)))
        while any(session.stopped is None for _, session in sessions):
            for threads, session in sessions:
                if session.stopped is None:
                    with thread_count(threads):
                        session.round()
        measurements = []
        for threads, session in sessions:
            with thread_count(threads):
                measurements.append(session.measurement(_node_profile))
    return BenchGrid(measurements)


def _check_callable(fn: Callable, threads: int | None) -> None:
    if not callable(fn):
        raise ArgumentError(f"bench needs a callable (an op, function, module or lambda), "
                            f"got {type(fn).__name__}")
    whole_number("threads", threads, minimum=1, none=True)


def _check_options(options: dict) -> None:
    """One-line ArgumentErrors for bench()'s own options."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ArgumentError(f"unknown bench options {unknown}; the options are {list(OPTIONS)}")
    target, budget = options.get("target", 0.01), options.get("budget", 2.0)
    baseline = options.get("baseline")
    if not isinstance(target, (int, float)) or not 0 < target < 1:
        raise ArgumentError(f"target must be a fraction in (0, 1), e.g. 0.01 for ±1%, "
                            f"got {target!r}")
    if not isinstance(budget, (int, float)) or not budget > 0:
        raise ArgumentError(f"budget must be seconds > 0, got {budget!r}")
    if baseline is not None and baseline not in BASELINE_CHOICES:
        raise ArgumentError(f"baseline must be one of {sorted(BASELINE_CHOICES)} or None, "
                            f"got {baseline!r}")


@contextlib.contextmanager
def thread_count(threads: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to `threads` inside (None: left as it is), restored
    after.

    Example:
        >>> with thread_count(1):
        ...     torch.get_num_threads()
        1
    """
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _label_of(fn: Callable) -> str:
    """`torch.add`, `my_function`, `Linear`, `<lambda>`.

    Example:
        >>> _label_of(torch.add), _label_of(torch.nn.ReLU()), _label_of(lambda x: x)
        ('torch.add', 'ReLU', '<lambda>')
    """
    if isinstance(fn, torch.nn.Module):
        return type(fn).__name__
    name = getattr(fn, "__name__", None)
    if name and getattr(torch, name, None) is fn:
        return f"torch.{name}"
    if inspect.isbuiltin(fn) and name:
        return name
    kind: type = type(fn)  # (a type's __name__: pyright reads a builtin's instance property)
    return getattr(fn, "__qualname__", None) or name or kind.__name__


def bench_grid(fn: Callable, params: dict[str, list], setup: Callable | None = None,
               **options: Any) -> BenchGrid:
    """bench() of `fn` on every combination of `params` (name -> list of values), as one
    BenchGrid table: rows by the first parameters, columns by the last. The cells' rounds of
    blocks take turns (bench_cells), so a drift of the machine reaches every cell alike.

    Each cell calls `fn(*setup(**cell))` when `setup` is given (it returns the inputs: a
    tuple, a dict of keyword arguments, or one value), else `fn(**cell)`. A parameter named
    "threads" sets torch's thread count instead. `options` are bench()'s (OPTIONS); `budget`
    is per cell.

    Example:
        >>> grid = bench_grid(torch.add, {"n": [1, 1000]}, budget=0.1,
        ...                   setup=lambda n: (torch.ones(n), torch.ones(n)))
        >>> len(grid.measurements)
        2
    """
    cells = []
    for cell in grid_cells(params):
        inputs = {k: v for k, v in cell.items() if k != THREADS_PARAM}
        args, kwargs = _grid_inputs(setup, inputs)
        cells.append((fn, args, kwargs, cell.get(THREADS_PARAM), None, cell))
    return bench_cells(cells, **options)


def grid_cells(params: dict[str, list]) -> Iterator[dict[str, Any]]:
    """Every combination of `params` (name -> list of values), the last name varying fastest;
    a one-line ArgumentError when a parameter is not a non-empty list.

    Example:
        >>> list(grid_cells({"n": [1, 2], "dtype": ["f32"]}))
        [{'n': 1, 'dtype': 'f32'}, {'n': 2, 'dtype': 'f32'}]
    """
    _check_grid(params)
    for values in itertools.product(*params.values()):
        yield dict(zip(params, values))


def _check_grid(params: Any) -> None:
    if not isinstance(params, dict) or not params:
        raise ArgumentError("params must be a dict of parameter name -> list of values, e.g. "
                            "{'n': [1, 1024]}")
    for name, values in params.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise ArgumentError(f"grid parameter {name!r} must be a non-empty list of values, "
                                f"got {type(values).__name__} {values!r}")


def _grid_inputs(setup: Callable | None, cell: dict) -> tuple[tuple, dict]:
    """(args, kwargs) of one grid cell."""
    if setup is None:
        return (), cell
    made = setup(**cell)
    if isinstance(made, dict):
        return (), made
    return (made if isinstance(made, tuple) else (made,)), {}


def _node_profile(fn: Callable, args: tuple, kwargs: dict, wanted: bool | None, label: str):
    """pyfxprof.profile() of `fn` when it is a module, or a function fx traces (into 2 nodes
    or more when `wanted` is None); None otherwise. `wanted=True` says why it cannot."""
    from .runner import profile as run_profile

    model = _traced(fn) if not kwargs else None
    if model is None or wanted is False:
        if wanted:
            raise PyfxprofError(f"profile=True needs a module or a function torch.fx can trace "
                                f"with positional inputs; {label} is neither")
        return None
    if wanted is None and isinstance(model, fx.GraphModule) and len(timed_nodes(model.graph)) < 2:
        return None
    return run_profile(model, tuple(args), runs=PROFILE_RUNS, warmup=PROFILE_WARMUP,
                       progress=False, name=label, alone=False)


def _traced(fn: Callable) -> torch.nn.Module | None:
    """`fn` itself when a module, its fx trace when a traceable Python function, else None."""
    if isinstance(fn, torch.nn.Module):
        return fn
    if not inspect.isfunction(fn):
        return None
    try:
        return fx.symbolic_trace(fn)
    except Exception:  # not traceable (data-dependent control flow, ...): no breakdown
        return None


