"""pyfxprof.bench() and bench_grid(): microbenchmarks of any callable (an op, a function, a
module, a lambda), each call timed natively, blocks of calls added until the median's 95%
interval reaches a target or a time budget is spent. docs/bench.md."""

from __future__ import annotations

import contextlib
import inspect
import itertools
import time
from typing import Any, Callable, Iterator

import numpy as np
import torch
import torch.fx as fx

from ..capture.flops import FlopMeter
from ..capture.tracing import timed_nodes
from ..data.bench_compare import Compare
from ..data.measurement import Measurement, median_interval, relative_half_width
from ..data.warmup import warmup_runs
from ..errors import ArgumentError, PyfxprofError, first_line
from ..timing.device_events import ensure_cuda_runtime
from .bench_timers import (BASELINE_CHOICES, BlockTimer, block_size, call_once,
                           python_timed_blocks)

#: Fewest steady blocks before the run may stop at its target.
MIN_BLOCKS = 10
#: Timed runs and untimed warm-up runs of the per-node profile of an fx-traceable function.
PROFILE_RUNS, PROFILE_WARMUP = 30, 5
#: bench_grid's parameter that sets torch's thread count instead of reaching the function.
THREADS_PARAM = "threads"


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
        label, params: how the Measurement is named, and its grid cell (bench_grid).
        Keyword arguments of bench's own names reach `fn` through functools.partial.

    Example:
        >>> m = bench(torch.add, torch.ones(1000), torch.ones(1000), budget=0.2)
        >>> m.median > 0 and m.calls > 0
        True
    """
    label = label or _label_of(fn)
    _check_options(fn, target, budget, baseline, threads)
    with _threads(threads), _rng_kept():
        estimate = _first_calls(fn, args, kwargs, budget, label)
        device = _device_of(args, kwargs)
        events = device.startswith("cuda") if device_events is None else device_events
        if events:
            ensure_cuda_runtime()
        timer = BlockTimer(fn, args, kwargs, block_size(estimate * 1e9), events)
        timer.run(1)  # one untimed block: the generated code's and the caches' first run
        timer.take()
        names = BASELINE_CHOICES[baseline] if baseline else ()
        (samples, block_ns, device_samples), found, stopped = _adaptive_blocks(
            timer, (fn, args, kwargs), names, target, budget)
        measured = Measurement(
            label, samples, block_ns, _warmup_blocks(block_ns), timer.overhead_ns, target,
            budget, stopped, torch.get_num_threads(), device, _flops_of(fn, args, kwargs),
            device_samples, {name: np.vstack(blocks) for name, blocks in found.items()},
            _node_profile(fn, args, kwargs, profile, label), dict(params or {}))
    return measured


def _adaptive_blocks(timer: BlockTimer, call: tuple, baselines: tuple[str, ...],
                     target: float, budget: float) -> tuple:
    """Blocks in rounds (a tenth of the blocks so far, within the budget left) until the
    steady blocks' median interval is within ±target or the budget is spent: ((each call's
    ns, each block's ns, CUDA-event ns or None), baseline blocks by name, "target" or
    "budget")."""
    taken: list[tuple] = []
    found: dict[str, list[np.ndarray]] = {name: [] for name in baselines}
    start, blocks, step = time.perf_counter(), 0, 1
    while True:
        timer.run(step)
        taken.append(timer.take())
        for name, values in python_timed_blocks(baselines, *call, timer.calls, step).items():
            found[name].extend(values)
        blocks += step
        block_ns = np.concatenate([part[1] for part in taken])
        if blocks >= MIN_BLOCKS and _precision(block_ns) <= target:
            stopped = "target"
            break
        elapsed = time.perf_counter() - start
        if elapsed >= budget:
            stopped = "budget"
            break
        step = max(1, min(blocks // 10, int((budget - elapsed) / (elapsed / blocks))))
    device = None if taken[0][2] is None else np.vstack([part[2] for part in taken])
    return (np.vstack([part[0] for part in taken]), block_ns, device), found, stopped


def _warmup_blocks(block_ns: np.ndarray) -> int:
    """Leading blocks slower than the rest (data/warmup.py)."""
    return int(warmup_runs(block_ns)[0])


def _precision(block_ns: np.ndarray) -> float:
    """Relative half-width of the median's interval over the steady blocks (inf: too few)."""
    steady = block_ns[_warmup_blocks(block_ns):]
    if len(steady) < MIN_BLOCKS:
        return float("inf")
    return relative_half_width(median_interval(steady), float(np.median(steady)))


def _check_options(fn: Callable, target: float, budget: float, baseline: str | None,
                   threads: int | None) -> None:
    """One-line ArgumentErrors for bench()'s own arguments."""
    if not callable(fn):
        raise ArgumentError(f"bench needs a callable (an op, function, module or lambda), "
                            f"got {type(fn).__name__}")
    if not isinstance(target, (int, float)) or not 0 < target < 1:
        raise ArgumentError(f"target must be a fraction in (0, 1), e.g. 0.01 for ±1%, "
                            f"got {target!r}")
    if not isinstance(budget, (int, float)) or not budget > 0:
        raise ArgumentError(f"budget must be seconds > 0, got {budget!r}")
    if baseline is not None and baseline not in BASELINE_CHOICES:
        raise ArgumentError(f"baseline must be one of {sorted(BASELINE_CHOICES)} or None, "
                            f"got {baseline!r}")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ArgumentError(f"threads must be an int >= 1, got {threads!r}")


def _first_calls(fn: Callable, args: tuple, kwargs: dict, budget: float, label: str) -> float:
    """Two untimed calls: a clear error when `fn` raises on its inputs or one call takes more
    than the budget; the quicker call's seconds (to size the blocks)."""
    durations = []
    for _ in range(2):
        try:
            _, seconds = call_once(fn, args, kwargs)
        except Exception as error:
            raise PyfxprofError(f"{label} raised on its inputs: {type(error).__name__}: "
                                f"{first_line(error)}; fix the call or its inputs") from None
        if seconds > budget:
            raise ArgumentError(f"budget={budget:g} s is too small for one call of {label} "
                                f"({seconds:.3g} s): give a larger budget")
        durations.append(seconds)
    return min(durations)


@contextlib.contextmanager
def _threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to `threads` inside, restored after."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _rng_kept() -> contextlib.AbstractContextManager:
    """torch's CPU generator (and the CUDA ones in use) restored after the calls."""
    cuda = torch.cuda.is_available() and torch.cuda.is_initialized()
    return torch.random.fork_rng(devices=range(torch.cuda.device_count()) if cuda else [])


def _tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    return [v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)]


def _device_of(args: tuple, kwargs: dict) -> str:
    """Device of the first tensor argument ("cpu" without one)."""
    tensors = _tensors(args, kwargs)
    return str(tensors[0].device) if tensors else "cpu"


def _flops_of(fn: Callable, args: tuple, kwargs: dict) -> int | None:
    """FLOPs of one untimed call (torch.utils.flop_counter); None when unknown (0 counted,
    e.g. element-wise ops, or the counter failed)."""
    try:
        with FlopMeter() as meter:
            fn(*args, **kwargs)
        return int(meter.total()) or None
    except Exception:  # the count is optional: the timed calls already ran fine
        return None


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
    return getattr(fn, "__qualname__", None) or name or type(fn).__name__


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
                       progress=False, name=label)


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


def bench_grid(fn: Callable, params: dict[str, list], setup: Callable | None = None,
               **options: Any) -> Compare:
    """bench() of `fn` on every combination of `params` (name -> list of values), as one
    Compare table: rows by the first parameters, columns by the last.

    Each cell calls `fn(*setup(**cell))` when `setup` is given (it returns the inputs: a
    tuple, a dict of keyword arguments, or one value), else `fn(**cell)`. A parameter named
    "threads" sets torch's thread count instead. `options` go to bench().

    Example:
        >>> grid = bench_grid(torch.add, {"n": [1, 1000]}, budget=0.1,
        ...                   setup=lambda n: (torch.ones(n), torch.ones(n)))
        >>> len(grid.measurements)
        2
    """
    measurements = []
    for cell in grid_cells(params):
        inputs = {k: v for k, v in cell.items() if k != THREADS_PARAM}
        args, kwargs = _grid_inputs(setup, inputs)
        measurements.append(bench(fn, *args, threads=cell.get(THREADS_PARAM), params=cell,
                                  **options, **kwargs))
    return Compare(measurements)


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
