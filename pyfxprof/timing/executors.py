"""The executors behind one small Protocol: codegen (native timed calls compiled into the graph), the
ProfilingInterpreter, module hooks (timing/hook_timing.py) and, on any of the graph ones, device
events; executor_for picks one for a capture. run/ drives them all the same way and never asks
which one it holds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np
import torch
import torch.fx as fx

from .native import _C
from ..errors import PyfxprofError
from .calibration import Calibration, calibrate_timed_calls
from .device_events import DeviceEvents
from .durations import RunTimings
from .graph_spans import GraphsExecutor
from .hook_timing import HooksExecutor
from .instrument import instrument
from .interpreter import ProfilingInterpreter
from .nvtx import name_ranges
from .recorder import RECORDER
from .run_table import RunTable

if TYPE_CHECKING:
    from ..capture.ladder import Prepared

#: Valid values of profile(mode=...).
MODES = ("codegen", "interpreter")


class Executor(Protocol):
    """Runs a captured model with timing; `with executor:` around the runs (hooks exist only
    inside it). `reset(runs)` forgets the runs so far (warm-up) and makes room for `runs`
    more; `timings()` hands over the runs since, overhead subtracted."""

    mode: str                    # "codegen", "interpreter" or "hooks"
    calibration: Calibration
    calls_per_run: int           # calibrated intervals in a run (their cost is in its total)
    device: DeviceEvents | None  # CUDA event timing, when on

    def __enter__(self) -> "Executor": ...
    def __exit__(self, *exc_info: Any) -> None: ...
    def run(self, args: tuple, /) -> Any: ...
    def failed_node(self, names: list[str]) -> str | None: ...
    def reset(self, runs: int = 0) -> None: ...
    def timings(self) -> RunTimings: ...
    def device_samples(self) -> np.ndarray | None: ...


class _EventsRun:
    """CodegenExecutor's run with CUDA events: one timed run on `args`, the native TimedRun's
    steps with the device's events around them."""

    def __init__(self, table: RunTable, forward: Callable[..., Any],
                 device: DeviceEvents) -> None:
        self.table, self.forward, self.device, self.runs = table, forward, device, 0

    def __call__(self, args: tuple) -> Any:
        self.device.begin_run()
        self.table.begin()
        try:
            output = self.forward(*args)
        except _C.CudaError as error:
            self.table.abandon()
            self.device.abandon_run()
            raise PyfxprofError(f"recording a CUDA event failed in run {self.runs}: {error}; "
                                "no profile was built from incomplete events") from None
        except BaseException:
            self.table.abandon()
            self.device.abandon_run()
            raise
        self.table.end()
        self.device.end_run(self.runs)
        self.runs += 1
        return output


class CodegenExecutor:
    """Runs the graph recompiled with each node's call timed natively (timing/instrument.py).

    Example:
        >>> import torch
        >>> gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.ReLU(), torch.nn.ReLU()))
        >>> executor = CodegenExecutor(gm, 2)
        >>> with executor:
        ...     _ = executor.run((torch.zeros(3),))
        >>> executor.timings().intervals.shape
        (1, 2)
    """

    mode = "codegen"

    def __init__(self, gm: fx.GraphModule, n_nodes: int, device_events: bool = False) -> None:
        self.n_nodes = self.calls_per_run = n_nodes
        self.table = RunTable(n_nodes, spare=1)  # the user's call's row (run/user_call.py)
        first_event = RECORDER.allocate(n_nodes + 1) if device_events else None
        self.module = instrument(gm, self.table.native, first_event)
        # the generated forward itself: the instrumented GraphModule is ours and has no
        # hooks, so nn.Module.__call__ and GraphModule's call wrapper would only add time
        self._forward = self.module.forward
        self.calibration: Calibration = calibrate_timed_calls()
        self.device = None if first_event is None else DeviceEvents(first_event, n_nodes)
        # run(args), one timed run: without device events one native call (the table's
        # begin_run, the forward and end_run: the Profiler's hot path, no Python frame, no
        # pybind11 call; a raising run's row stays unended, for failed_node())
        self.run: Callable[[tuple], Any] = (
            _C.timed_run(self.table.native, self._forward, PyfxprofError) if self.device is None
            else _EventsRun(self.table, self._forward, self.device))

    def __enter__(self) -> "CodegenExecutor":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.table.abandon()

    def failed_node(self, names: list[str]) -> str | None:
        """The name of the node the last run raised in (None: after the last node)."""
        return self.table.failed_node(names)

    def device_samples(self) -> np.ndarray | None:
        """Device ns per node (runs x nodes), or None without device timing."""
        return None if self.device is None else self.device.samples()

    def reset(self, runs: int = 0) -> None:
        self.table.clear()
        self.table.reserve(runs, 1 if self.device is None else 2)
        if self.device is not None:
            self.device.reset()

    def timings(self) -> RunTimings:
        return self.calibration.correct(self.table.take(), self.calls_per_run)


class InterpreterExecutor:
    """Runs the graph through ProfilingInterpreter (each node's call timed natively)."""

    mode = "interpreter"
    device: DeviceEvents | None = None  # the interpreter times the host only

    def __init__(self, gm: fx.GraphModule, n_nodes: int) -> None:
        self.interpreter = ProfilingInterpreter(gm)
        self.calibration: Calibration = self.interpreter.calibration
        self.calls_per_run = n_nodes

    def __enter__(self) -> "InterpreterExecutor":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.interpreter.table.abandon()

    def run(self, args: tuple) -> Any:
        return self.interpreter.run(*args)

    def failed_node(self, names: list[str]) -> str | None:
        """The name of the node the last run raised in (None: after the last node)."""
        return self.interpreter.table.failed_node(names)

    def reset(self, runs: int = 0) -> None:
        self.interpreter.reset()
        self.interpreter.table.reserve(runs)

    def timings(self) -> RunTimings:
        timings = self.interpreter.timings()
        self.interpreter.reset()  # handed over: corrected in place below
        return self.calibration.correct(timings, self.calls_per_run)

    def device_samples(self) -> None:
        """The interpreter times the host only."""
        return None


def make_executor(mode: str, gm: fx.GraphModule, n_nodes: int,
                  device_events: bool = False) -> Executor:
    """The executor for `mode` ("codegen" or "interpreter"); device events need codegen."""
    if mode == "codegen":
        return CodegenExecutor(gm, n_nodes, device_events)
    if device_events:
        raise PyfxprofError("device (CUDA event) timing needs mode='codegen'")
    return InterpreterExecutor(gm, n_nodes)


def executor_for(model: torch.nn.Module, prepared: Prepared, mode: str, device_events: bool):
    """The graph's executor for `mode`, or the hooks executor for hooks and whole captures
    (which time the host only: a note says so when device events were asked for).

    Example:
        >>> from pyfxprof.capture.ladder import prepare
        >>> model = torch.nn.Sequential(torch.nn.ReLU())
        >>> type(executor_for(model, prepare(model, (torch.zeros(2),)), "codegen", False)).__name__
        'CodegenExecutor'
    """
    if prepared.captured.graph_module is None and prepared.captured.frame is not None:
        if mode != "codegen" or device_events:  # a call Dynamo split into several graphs
            prepared.captured.notes.append("several Dynamo graphs are timed by codegen on "
                                           "the host only")
        return GraphsExecutor(prepared.captured.frame, prepared.kwargs)
    if prepared.analysis is None:
        return make_executor(mode, prepared.captured.graph_module_or_raise(), len(prepared.frame),
                             device_events)
    if device_events:
        prepared.captured.notes.append("device timing needs an FX capture: host times only")
    return HooksExecutor(model, prepared.captured.leaves, prepared.analysis, prepared.kwargs)


def ready_executor(cached: Any, keep: Callable[[Any], Any], model: torch.nn.Module,
                   prepared: Prepared, mode: str, device_events: bool, *,
                   range_names: list[str] | None, clock: Any) -> tuple[Any, int]:
    """(the `cached` executor, else executor_for()'s, instrumented and calibrated, its wall
    time in `clock` (run/wall_clock.py's StepClock) as "instrument", handed to `keep` (the
    capture cache's); the recorder's drop count before it: RECORDER.start() empties the
    buffer first, so a profile counts its own drops only), its NVTX ranges named
    `range_names` (None: none, a cached executor reset)."""
    drops_before = RECORDER.start()
    executor = cached or keep(clock.timed("instrument", executor_for, model, prepared, mode,
                                          device_events))
    name_ranges(executor, range_names)
    return executor, drops_before
