"""The two ways of running a captured graph with timing: codegen marks or the ProfilingInterpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch.fx as fx

from .. import _C
from .calibration import Calibration, calibrate_codegen
from .device_events import DeviceEvents
from ..errors import PyfxprofError
from .instrument import instrument
from .interpreter import ProfilingInterpreter
from .recorder import RECORDER, Records, runs_between_collects
from .durations import RunTimings, boundary_timings
from .failures import MarkLayout

#: Valid values of profile(mode=...).
MODES = ("codegen", "interpreter")


class CodegenExecutor:
    """Runs the graph recompiled with one mark per node boundary (n+1 marks for n nodes)."""

    def __init__(self, gm: fx.GraphModule, n_nodes: int, device_events: bool = False) -> None:
        self.n_nodes = n_nodes
        self.first_id = RECORDER.allocate(n_nodes + 1)
        mark = _C.mark_cuda if device_events else _C.mark
        self.module = instrument(gm, self.first_id, mark)
        try:
            self.calibration: Calibration = calibrate_codegen(mark=mark)
        except _C.CudaError as error:
            _C.cuda_discard()
            raise PyfxprofError(f"recording CUDA events failed while calibrating: {error}") from None
        self.device = DeviceEvents(self.first_id, n_nodes) if device_events else None
        self.marks_per_run = n_nodes + 1
        self.layout = MarkLayout(self.first_id, n_nodes + 1, 1)
        self._runs = 0
        self._chunks: list[Records] = []
        self._runs_per_drain = runs_between_collects(self.marks_per_run)
        self._runs_since_drain = 0

    def run(self, args: tuple) -> Any:
        if self.device is None:
            _C.mark_kind(self.first_id, _C.KIND_RUN_BEGIN)
            output = self.module(*args)
            _C.mark_kind(self.first_id, _C.KIND_RUN_END)
        else:
            output = self._run_with_device_events(args)
        self._runs += 1
        self._runs_since_drain += 1
        if self._runs_since_drain >= self._runs_per_drain:  # keep the buffer far from its cap
            self._drain()
        return output

    def _run_with_device_events(self, args: tuple) -> Any:
        self.device.begin_run()
        try:
            _C.mark_kind(self.first_id, _C.KIND_RUN_BEGIN)
            output = self.module(*args)
            _C.mark_kind(self.first_id, _C.KIND_RUN_END)
        except _C.CudaError as error:
            self.device.abandon_run()
            raise PyfxprofError(f"recording a CUDA event failed in run {self._runs}: {error}; "
                                "no profile was built from incomplete events") from None
        self.device.end_run(self._runs)
        return output

    def device_samples(self) -> np.ndarray | None:
        """Device ns per node (runs x nodes), or None without device timing."""
        return None if self.device is None else self.device.samples()

    def _drain(self) -> None:
        self._chunks.append(RECORDER.collect(self.first_id, self.n_nodes + 1))
        self._runs_since_drain = 0

    def reset(self) -> None:
        self._drain()
        self._chunks = []
        if self.device is not None:
            self.device.reset()

    def timings(self) -> RunTimings:
        self._drain()
        records = Records(*(np.concatenate([getattr(c, f) for c in self._chunks])
                            for f in ("timestamp_ns", "id", "thread", "kind")))
        return boundary_timings(records, self.first_id, self.n_nodes)


class InterpreterExecutor:
    """Runs the graph through ProfilingInterpreter (begin/end marks around each node's call)."""

    def __init__(self, gm: fx.GraphModule, n_nodes: int) -> None:
        self.interpreter = ProfilingInterpreter(gm)
        self.calibration: Calibration = self.interpreter.calibration
        self.marks_per_run = 2 * n_nodes
        self.layout = MarkLayout(self.interpreter.first_id, max(2 * n_nodes, 1), 2)

    def run(self, args: tuple) -> Any:
        return self.interpreter.run(*args)

    def reset(self) -> None:
        self.interpreter.reset()

    def timings(self) -> RunTimings:
        return self.interpreter.timings()

    def device_samples(self) -> None:
        """The interpreter times the host only."""
        return None


def make_executor(mode: str, gm: fx.GraphModule, n_nodes: int, device_events: bool = False):
    """The executor for `mode` ("codegen" or "interpreter"); device events need codegen."""
    if mode == "codegen":
        return CodegenExecutor(gm, n_nodes, device_events)
    if device_events:
        raise PyfxprofError("device (CUDA event) timing needs mode='codegen'")
    return InterpreterExecutor(gm, n_nodes)
