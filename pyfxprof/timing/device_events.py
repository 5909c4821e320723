"""Device (GPU) time per node from CUDA events recorded at every node boundary, resolved once
per run after a single synchronize. Never a per-node synchronize."""

from __future__ import annotations

import time

import numpy as np
import torch

from .native import _C
from ..errors import PyfxprofError


def ensure_cuda_runtime() -> str:
    """Load the CUDA runtime for event timing if needed; returns the library, or a one-line
    PyfxprofError saying why device timing is impossible.

    Example:
        >>> ensure_cuda_runtime()  # doctest: +SKIP
        'libcudart.so.13'
    """
    if not _C.cuda_available():
        try:
            _C.cuda_load()
        except _C.CudaUnavailable as error:
            raise PyfxprofError(f"device timing needs a usable CUDA runtime: {error}") from None
    return _C.cuda_status()["library"]


_RECORD_COST_NS: dict[str, float] = {}  # per CUDA runtime library, measured once


def event_record_cost_ns(records: int = 512) -> float:
    """Host ns one CUDA event record costs on the current stream (what device timing adds to
    each node boundary on the host): a block of `records` native records minus a block of as
    many trivial native calls, best of 5, measured once per process and runtime. Call it
    between runs (it discards the events recorded so far).

    Example:
        >>> event_record_cost_ns()  # doctest: +SKIP
        2150.0
    """
    library = _C.cuda_status()["library"]
    if library not in _RECORD_COST_NS:
        stream, best = current_stream_handle(), float("inf")
        for _ in range(5):
            started = time.perf_counter_ns()
            for k in range(records):
                _C.cuda_record(k, stream)
            recorded = time.perf_counter_ns()
            for _ in range(records):
                _C.cuda_available()
            best = min(best, ((recorded - started) - (time.perf_counter_ns() - recorded))
                       / records)
            _C.cuda_discard()
        _RECORD_COST_NS[library] = max(best, 0.0)
    return _RECORD_COST_NS[library]


def current_stream_handle() -> int:
    """torch's current CUDA stream as an integer handle (0, the default stream, without CUDA)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return int(torch.cuda.current_stream().cuda_stream)
    return 0


class DeviceEvents:
    """Collects device ns per node: node k = event k+1 minus event k, as host marks are.

    Events are recorded by `_C.mark_cuda` on the stream current when the run starts; work
    that node launches on other streams is not attributed to it.
    """

    def __init__(self, first_id: int, n_nodes: int) -> None:
        self.first_id, self.n_nodes = first_id, n_nodes
        self._rows: list[np.ndarray] = []
        self._expected = first_id + np.arange(n_nodes + 1)

    def begin_run(self) -> None:
        _C.cuda_discard()
        _C.cuda_set_stream(current_stream_handle())

    def end_run(self, run_index: int) -> None:
        """Synchronize once, check every boundary has its event, keep the node times."""
        try:
            resolved = _C.cuda_resolve()
        except _C.CudaError as error:
            raise PyfxprofError(f"device timing failed in run {run_index}: {error}; "
                                "no profile was built from incomplete events") from None
        if not np.array_equal(resolved["id"], self._expected):
            raise PyfxprofError(f"device timing of run {run_index} recorded "
                                f"{len(resolved['id'])} events for {len(self._expected)} node "
                                "boundaries; no profile was built from incomplete events")
        self._rows.append(resolved["elapsed_ns"][1:].astype(np.int64))

    def abandon_run(self) -> None:
        _C.cuda_discard()

    def reset(self) -> None:
        self._rows = []

    def samples(self) -> np.ndarray:
        """Device ns, runs x nodes."""
        if not self._rows:
            return np.empty((0, self.n_nodes), dtype=np.int64)
        return np.stack(self._rows)
