"""The machine's measured peaks for the roofline (docs/roofline.md): a large-GEMM FLOP rate
per dtype, a STREAM-style triad bandwidth over arrays far larger than the last-level cache,
and each op kind's fixed cost (a call on a minimal input); measured once per machine and kept
in a cache file with how and when they were measured."""

from __future__ import annotations

import datetime
import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from ..capture.model_state import dtype_name
from ..data.roofline import WAIT_SHARE
from ..data.roofline_ops import KINDS
from ..errors import PyfxprofError
from ..timing.call_timer import timed_calls
from .cache_size import last_level_cache_bytes
from .first_touch import faults_per_page, first_touch_cost, first_touch_threshold
from .metadata import cpu_name
from .peaks_cache import CACHE_ENV, CACHE_VERSION, cache_path, machine_key, read_cache
from .run_counters import core_wait_ns

#: Dtypes whose GEMM peak is measured.
GEMM_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
#: A GEMM grows (doubling n from 256) until one product takes GEMM_SECONDS and its rate
#: grew less than GEMM_GROWTH times with the last doubling, or n reaches the cap of its
#: device; never to a product of GEMM_MAX_SECONDS: short trials, so that many fit between
#: a shared machine's slow phases.
GEMM_SECONDS, GEMM_GROWTH, GEMM_MAX_SECONDS = 0.01, 1.25, 0.1
GEMM_MAX_N = {"cpu": 4096, "cuda": 16384}
#: Each triad array holds at least this many times the last-level cache, and 64 MiB.
LLC_FACTOR, MIN_ARRAY_BYTES = 4, 64 << 20
#: Rounds of interleaved trials the peaks are the best of: each round times one product
#: per dtype and one triad, in turn.
PEAK_ROUNDS = 15


def _synchronized(device: torch.device) -> Callable[[], None]:
    """A wait for the device's queued work (nothing to wait for on the CPU)."""
    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)


def seconds_of(call: Callable[[], Any], device: torch.device) -> float:
    """Seconds of one call of `call`: on a GPU from CUDA events (the device's timers), on
    the CPU from perf_counter.

    Example:
        >>> seconds_of(lambda: None, torch.device("cpu")) >= 0
        True
    """
    if device.type == "cuda":
        start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        start.record()
        call()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    begin = time.perf_counter()
    call()
    return time.perf_counter() - begin


@dataclass
class Trials:
    """One call's timed trials (interleaved_seconds): their seconds and whether each waited
    for cores (this process's threads runnable, not running, data.roofline.WAIT_SHARE of
    the trial or more: run.run_counters.core_wait_ns; never where unreadable).

    Example:
        >>> trials = Trials(np.array([1.0, 2.0, 3.0]), np.array([True, False, False]))
        >>> trials.best(), trials.all_waited
        (2.0, False)
    """

    seconds: np.ndarray
    waited: np.ndarray

    def best(self) -> float:
        """The fastest trial that did not wait for cores, else (all did) the fastest."""
        clean = self.seconds[~self.waited]
        return float((clean if len(clean) else self.seconds).min())

    @property
    def all_waited(self) -> bool:
        """Whether every trial waited for cores: its best is the scheduler's, not the
        machine's."""
        return bool(self.waited.all())


def _trial(call: Callable[[], Any], device: torch.device) -> tuple[float, bool]:
    """(seconds, waited) of one call: seconds_of, and whether the process's threads waited
    for a core WAIT_SHARE of them or more (read before and after, outside the timing)."""
    before = core_wait_ns()
    seconds = seconds_of(call, device)
    after = core_wait_ns()
    return seconds, (before is not None and after is not None
                     and (after - before) / 1e9 >= WAIT_SHARE * seconds)


def interleaved_seconds(calls: dict[str, Callable[[], Any]], device: torch.device,
                        rounds: int = PEAK_ROUNDS) -> dict[str, Trials]:
    """Each call's trials (Trials: seconds, waited for cores) in `rounds` rounds, a round
    timing every call once in turn (after one untimed call of each): a slow phase of a
    shared machine (everything slower for a second or two) or another process's burst hits
    a few trials of every measurement rather than all trials of one.

    Example:
        >>> times = interleaved_seconds({"a": lambda: None, "b": lambda: None},
        ...                             torch.device("cpu"), rounds=3)
        >>> {name: len(trials.seconds) for name, trials in times.items()}
        {'a': 3, 'b': 3}
    """
    for call in calls.values():
        call()
    times: dict[str, list[tuple[float, bool]]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            times[name].append(_trial(call, device))
    return {name: Trials(np.array([s for s, _ in found]), np.array([w for _, w in found]))
            for name, found in times.items()}


def gemm_trial(dtype: torch.dtype, device: torch.device, n: int) -> Callable[[], Any]:
    """One n x n x n product (2n³ FLOPs) of `dtype` on `device`, into a kept output."""
    a, b = (torch.randn(n, n, device=device).to(dtype) for _ in range(2))
    out = torch.empty(n, n, device=device, dtype=dtype)
    return lambda: torch.mm(a, b, out=out)


def gemm_size(dtype: torch.dtype, device: torch.device) -> int:
    """The n of the GEMM trials: doubled from 256 (each size timed as the best of two
    products) until a product takes GEMM_SECONDS and its rate grew less than GEMM_GROWTH
    times over the previous size's (the rate has saturated; a fixed delay such as a
    scheduler's time slice on a loaded machine does not stop it early), or n reaches
    GEMM_MAX_N; a size whose product takes GEMM_MAX_SECONDS or more is not used (a slow
    dtype stays at the last size under it)."""
    n, cap, last_rate = 256, GEMM_MAX_N[device.type], 0.0
    while n < cap:
        best = interleaved_seconds({"gemm": gemm_trial(dtype, device, n)}, device,
                                   rounds=2)["gemm"].best()
        if best >= GEMM_MAX_SECONDS:
            return max(n // 2, 256)
        rate = 2.0 * n ** 3 / best
        if best >= GEMM_SECONDS and rate < GEMM_GROWTH * last_rate:
            return n
        last_rate, n = max(last_rate, rate), n * 2
    return n


def triad_arrays(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The triad's two input arrays: float32, LLC_FACTOR x the last-level cache each, at
    least MIN_ARRAY_BYTES."""
    count = max(LLC_FACTOR * last_level_cache_bytes(device), MIN_ARRAY_BYTES) // 4
    return torch.rand(count, device=device), torch.rand(count, device=device)


def triad_trial(arrays: tuple[torch.Tensor, torch.Tensor]) -> tuple[Callable[[], Any], int]:
    """(call, bytes): a = b + s·c (STREAM's triad) over `arrays` into a kept output, and the
    bytes it moves (2 reads and 1 write per element, counted as 3 x 4 bytes)."""
    b, c = arrays
    a = torch.empty_like(b)
    return (lambda: torch.add(b, c, alpha=3.0, out=a)), 3 * 4 * b.numel()


def peak_rates(device: torch.device, dtypes: tuple[torch.dtype, ...],
               arrays: tuple[torch.Tensor, torch.Tensor]
               ) -> tuple[dict[str, float], float, dict[str, int], list[str]]:
    """(GEMM FLOP/s per dtype name, triad bytes/s, GEMM n per dtype name, the names of
    those whose every trial waited for cores: "triad" for the bandwidth): the best of
    PEAK_ROUNDS interleaved rounds (Trials.best: of the trials that did not wait), each
    timing one product per dtype (of gemm_size) and one triad over `arrays`."""
    names = {dtype: dtype_name(dtype) for dtype in dtypes}
    sizes = {names[dtype]: gemm_size(dtype, device) for dtype in dtypes}
    triad, moved = triad_trial(arrays)
    calls = {names[dtype]: gemm_trial(dtype, device, sizes[names[dtype]]) for dtype in dtypes}
    trials = interleaved_seconds({**calls, " triad": triad}, device)
    best = {name: found.best() for name, found in trials.items()}
    flops = {name: 2.0 * n ** 3 / best[name] for name, n in sizes.items()}
    waited = [name.strip() for name, found in trials.items() if found.all_waited]
    return flops, moved / best[" triad"], sizes, waited


def first_touch(device: torch.device, arrays: tuple[torch.Tensor, torch.Tensor]
                ) -> dict[str, Any]:
    """The first touch of a fresh output (run.first_touch): ``first_touch_bytes``, the
    smallest allocation mapped anew on every call (None: none is),
    ``first_touch_ns_per_byte``, what its first write adds per output byte to the triad
    (0 when none is mapped anew), timed with the triad's `arrays`, and
    ``first_touch_faults_per_page``, the page faults that first write takes per page."""
    threshold = first_touch_threshold(device)
    b, c = arrays
    cost, per_page = 0.0, 1.0
    if threshold is not None and 4 * b.numel() >= threshold:
        cost, per_page = first_touch_cost(b, c), faults_per_page(b, c)
    return {"first_touch_bytes": threshold, "first_touch_ns_per_byte": cost,
            "first_touch_faults_per_page": per_page}


def _minimal_calls(device: torch.device) -> dict[str, Callable[[], Any]]:
    """One call per op kind (data.roofline_ops.KINDS) on the smallest input it takes."""
    one = torch.ones(1, 1, 1, 1, device=device)
    flat = torch.ones(1, device=device)
    index = torch.zeros(1, dtype=torch.long, device=device)
    functional = torch.nn.functional
    return {"conv": lambda: functional.conv2d(one, one),
            "pool": lambda: functional.max_pool2d(one, 1),
            "norm": lambda: functional.layer_norm(flat, (1,)),
            "softmax": lambda: torch.softmax(flat, 0),
            "embedding": lambda: functional.embedding(index, one[0, 0]),
            "matmul": lambda: functional.linear(one[0, 0], one[0, 0]),
            "reduction": lambda: flat.sum(),
            "copy": lambda: torch.cat([flat, flat]),
            "elementwise": lambda: flat + flat}


def fixed_costs(device: torch.device, calls: int = 200, repeats: int = 5) -> dict[str, float]:
    """ns per call of each op kind on a minimal input (KINDS): the best of `repeats` loops of
    `calls` calls, each loop's time over `calls` (on a GPU, the host's time per call with
    the device waited for at the end of each loop: launch cost included)."""
    wait, costs = _synchronized(device), {}
    for kind, call in _minimal_calls(device).items():
        def loop(call=call) -> None:
            for _ in range(calls):
                call()
            wait()
        with torch.inference_mode():
            best = float(timed_calls(loop, calls=repeats + 1, clock=time.perf_counter).min())
        costs[kind] = best / calls * 1e9
    assert set(costs) == set(KINDS), "every op kind has a minimal call"
    return costs


def measure_peaks(device: torch.device,
                  dtypes: tuple[torch.dtype, ...] = GEMM_DTYPES) -> dict[str, Any]:
    """The peaks of `device` measured now (about ten seconds on a CPU): GEMM FLOP/s per
    dtype of `dtypes`, the triad bandwidth, the first touch of a fresh output (first_touch),
    the op kinds' fixed costs, how and when they were measured, and ``waited_for_cores``:
    the peaks every trial of which waited for cores (the scheduler's, low; machine_peaks
    measures them again at its next call)."""
    with torch.inference_mode():
        arrays = triad_arrays(device)
        flops, bandwidth, sizes, waited = peak_rates(device, dtypes, arrays)
        touch = first_touch(device, arrays)
        array_bytes = 4 * arrays[0].numel()
        del arrays
    return {
        "key": machine_key(device, cpu_name()), "device": str(device), "flops": flops,
        "bandwidth": bandwidth, **touch, "fixed_ns": fixed_costs(device),
        "threads": torch.get_num_threads(), "waited_for_cores": waited,
        "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
        "how": _how(device, sizes, array_bytes, touch) + _waited_how(waited)}


def _how(device: torch.device, sizes: dict[str, int], array_bytes: int,
         touch: dict[str, Any]) -> str:
    """How the peaks were measured, in words (sizes, rounds, timer, threads, load)."""
    timer = "CUDA events" if device.type == "cuda" else "perf_counter"
    gemms = ", ".join(f"{name} {n}" for name, n in sizes.items())
    return (f"best of {PEAK_ROUNDS} interleaved rounds, each one GEMM per dtype (torch.mm "
            f"n x n x n, 2n³ FLOPs; n doubled from 256 until one took {GEMM_SECONDS * 1e3:g} "
            f"ms and its rate grew less than {GEMM_GROWTH:g}x: {gemms}) and one triad a = b + 3c over float32 arrays of {array_bytes >> 20} "
            f"MiB (last-level cache {last_level_cache_bytes(device) >> 20} MiB), 12 bytes per "
            f"element; first touch: {_first_touch_how(touch)}; fixed costs: best of 5 loops "
            f"of 200 minimal calls; {timer}; {torch.get_num_threads()} threads; {_load()}")


def _waited_how(waited: list[str]) -> str:
    """The peaks measured while waiting for cores, in words ("" for none)."""
    return (f"; every trial of {', '.join(waited)} waited for cores (the scheduler's peak, "
            "low: measured again at the next machine_peaks())" if waited else "")


def _load() -> str:
    """The load average when the peaks were measured, in words (a loaded machine gives low
    peaks)."""
    getloadavg = getattr(os, "getloadavg", None)
    return f"load average {getloadavg()[0]:.2f}" if getloadavg else "load average unknown"


def _first_touch_how(touch: dict[str, Any]) -> str:
    """How the first touch was measured, in words."""
    if touch["first_touch_bytes"] is None:
        return "no allocation was mapped anew on every call (getrusage's page faults)"
    return (f"allocations of {touch['first_touch_bytes'] >> 10} KiB and more are mapped anew "
            "on every call (getrusage's page faults, sizes doubling from 64 KiB); best of 5 "
            "triads with a fresh output less best of 5 into a kept one, interleaved")


def machine_peaks(device: str | torch.device | None = None,
                  remeasure: bool = False) -> dict[str, Any]:
    """This machine's measured peaks on `device` (default: the CPU): ``flops`` (FLOP/s per
    dtype, large GEMMs), ``bandwidth`` (bytes/s, STREAM-style triad over arrays far larger
    than the last-level cache), ``fixed_ns`` (ns of one call on a minimal input per op
    kind), ``threads``, ``waited_for_cores`` (the peaks every trial of which waited for
    cores), ``measured_at``, ``how`` and ``key``. Measured on the first call on a machine
    (about ten seconds on a CPU) and cached (cache_path(); per host, device, thread count
    and torch version); measured again at the next call when a cached peak waited for
    cores, and on ``remeasure=True``, replacing the cached peaks. docs/roofline.md says how
    each is measured.

    Example:
        >>> peaks = machine_peaks()  # doctest: +SKIP
        >>> peaks["flops"]["float32"] / 1e9, peaks["bandwidth"] / 1e9  # doctest: +SKIP
        (166.1, 20.4)
    """
    place = torch.device(device if device is not None else "cpu")
    if place.type == "cuda" and not torch.cuda.is_available():
        raise PyfxprofError(f"machine_peaks(device={str(device)!r}): CUDA is not available "
                            "here; measure the CPU's (device=None)")
    path, key = cache_path(), machine_key(place, cpu_name())
    machines = read_cache(path)
    if not remeasure and key in machines and not machines[key].get("waited_for_cores"):
        return machines[key]
    peaks = measure_peaks(place)
    machines[key] = peaks
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"version": CACHE_VERSION, "machines": machines}, indent=1),
                        encoding="utf-8")
    except OSError as error:
        raise PyfxprofError(f"cannot write the machine peaks cache {path}: {error.strerror}; "
                            f"set {CACHE_ENV} to a writable directory") from None
    return peaks
