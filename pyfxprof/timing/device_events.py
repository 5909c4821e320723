"""Device (GPU) time per node from CUDA events recorded at every node boundary, resolved once
per run after a single synchronize. Never a per-node synchronize."""

from __future__ import annotations

import numpy as np
import torch

<<<<<<< HEAD
from .native import _C
from ..errors import PyfxprofError
=======
from .. import _C
from ..capture.inputs import BoundInputs
from ..errors import ArgumentError, PyfxprofError
>>>>>>> 725e619 (One error type for caller mistakes: ArgumentError (a PyfxprofError that is also a ValueError and TypeError) replaces the bare ValueError/TypeError of views, data, analyses and tools (table sort_by/top, tree max_depth, export metric/runs, ...); load() of None/int/bytes, fuse_conv_bn(None), leaf_modules/autowrap_functions/concrete_args of the wrong kind, device='foo', device='meta', TorchScript models (profile and Profiler) refused in one line. CLI: --input beyond 2**40 elements, --threads over 1024, --ranks-out onto a file, report --rank-traces of one profile are one-line errors; MemoryError is one line; an interrupted hooks capture discards its marks (17 stray records before). tests/test_argument_errors.py)


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
<<<<<<< HEAD
=======


def place_on_device(model: torch.nn.Module, example_inputs, device: str | None):
    """(model, inputs) on `device`: a deep copy of the model when it must move (the user's
    model is never moved in place), inputs moved too. None leaves both where they are.

    Example:
        >>> m, x = place_on_device(torch.nn.ReLU(), (torch.zeros(1),), None)
    """
    if device is None:
        return model, example_inputs
    try:
        target = torch.device(device)
    except (RuntimeError, TypeError):
        raise ArgumentError(f"device must be 'cpu', 'cuda' or 'cuda:N' (or None: where the "
                            f"model is), got {device!r}") from None
    if target.type == "meta":
        raise ArgumentError("device 'meta' runs no operations, so there is nothing to time; "
                            "use 'cpu' or 'cuda'")
    if target.type == "cuda" and not torch.cuda.is_available():
        raise PyfxprofError(f"device {device!r} requested but torch sees no CUDA GPU "
                            "(torch.cuda.is_available() is False); use --device cpu")
    parameters = list(model.parameters()) + list(model.buffers())
    if any(p.device != target for p in parameters):
        import copy
        model = copy.deepcopy(model).to(target)
    return model, _move(example_inputs, target)


def _move(value, target: torch.device):
    if isinstance(value, BoundInputs):
        return BoundInputs(_move(value.args, target), _move(value.kwargs, target))
    if isinstance(value, torch.Tensor):
        return value.to(target)
    if isinstance(value, (tuple, list)):
        return type(value)(_move(v, target) for v in value)
    if isinstance(value, dict):
        return {k: _move(v, target) for k, v in value.items()}
    return value


def add_device_summary(frame, host: np.ndarray, device: np.ndarray, run_totals: np.ndarray,
                       meta: dict):
    """A copy of the nodes `frame` with `launch_bound` (host median above device median);
    sets the device busy share (device time of all nodes over the run's host total) in `meta`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        busy = device.sum(axis=1) / run_totals
    meta["device_busy_share"] = float(np.median(busy)) if np.isfinite(busy).all() else None
    return frame.assign(launch_bound=np.median(host, axis=0) > np.median(device, axis=0))
>>>>>>> 725e619 (One error type for caller mistakes: ArgumentError (a PyfxprofError that is also a ValueError and TypeError) replaces the bare ValueError/TypeError of views, data, analyses and tools (table sort_by/top, tree max_depth, export metric/runs, ...); load() of None/int/bytes, fuse_conv_bn(None), leaf_modules/autowrap_functions/concrete_args of the wrong kind, device='foo', device='meta', TorchScript models (profile and Profiler) refused in one line. CLI: --input beyond 2**40 elements, --threads over 1024, --ranks-out onto a file, report --rank-traces of one profile are one-line errors; MemoryError is one line; an interrupted hooks capture discards its marks (17 stray records before). tests/test_argument_errors.py)
