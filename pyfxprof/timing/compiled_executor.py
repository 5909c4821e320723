"""The executor of torch.compile'd models: each graph's Inductor wrapper `call` is made again from
its own source with every kernel call going through the native timed call (same kernels, buffers
and wrapper code, same globals), swapped in while profiling; a graph without a Python wrapper
(cpp_wrapper, CUDA graphs) is timed whole."""

from __future__ import annotations

import contextlib
import functools
import re
import types
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np


from .native import _C
from ..capture.inductor import CompiledGraph
from ..capture.provenance import CALL, CallSite, call_sites
from .calibration import Calibration, calibrate_timed_calls
from .device_events import DeviceEvents
from .durations import RunTimings
from .graph_spans import GraphSpans, SpannedExecutor
from .recorder import RECORDER
from .run_table import RunTable

#: The name the rewritten wrapper calls the native timed builtin by (a fast local default).
TIMED_NAME = "pyfxprof_timed"
#: The wrapper's entry point: `def call(args)` at module level or `def call(self, args)`.
_DEF_CALL = re.compile(r"^(?P<indent>\s*)def call\((?P<params>(?:self, )?args)\):\s*$")


@dataclass
class GraphPlan:
    """How one compiled graph is timed: its kernel `sites` with their callables (`targets`),
    or, with no sites, the whole graph as one call."""

    graph: CompiledGraph
    sites: list[CallSite]
    targets: list[Any]

    @property
    def columns(self) -> int:
        """Timed calls (columns) this graph takes: one per kernel call, or one when whole."""
        return len(self.sites) or 1


def _resolve(callee: str, namespace: dict) -> Any:
    """The object a dotted callee names in the wrapper's globals (None when it is local)."""
    first, *rest = callee.split(".")
    if first not in namespace:
        return None
    value = namespace[first]
    for part in rest:
        value = getattr(value, part, None)
    return value


def plan_graph(graph: CompiledGraph) -> GraphPlan:
    """The kernel calls of `graph`'s wrapper that can be timed (those whose callee is a
    global of the wrapper module); none when per-kernel timing is impossible.

    Example:
        >>> from types import SimpleNamespace as Fake
        >>> plan_graph(Fake(output=Fake(source_code="", cudagraph_info=None))).columns
        1
    """
    output = graph.output
    source = getattr(output, "source_code", "") or ""
    if getattr(output, "cudagraph_info", None) is not None or not _call_def(source):
        return GraphPlan(graph, [], [])
    namespace = output.current_callable.__globals__
    resolved = [(site, _resolve(site.callee, namespace)) for site in call_sites(source)]
    kept = [(site, target) for site, target in resolved if callable(target)]
    return GraphPlan(graph, [site for site, _ in kept], [target for _, target in kept])


def _call_def(source: str) -> tuple[int, int, re.Match] | None:
    """(first line, end line, match) of the wrapper's `def call`, None when absent."""
    lines = source.splitlines()
    for start, text in enumerate(lines):
        found = _DEF_CALL.match(text)
        if found:
            indent = len(found["indent"])
            end = start + 1
            while end < len(lines) and (not lines[end].strip()
                                        or len(lines[end]) - len(lines[end].lstrip()) > indent):
                end += 1
            return start, end, found
    return None


def timed_call_source(source: str, sites: list[CallSite], first_column: int) -> str:
    """The wrapper's `call` at module level, site k's call made `pyfxprof_timed(first_column
    + k, ...)`, with the builtin bound as a keyword default.

    Example:
        >>> src = ("def call(args):\\n    # [Provenance debug handles] k_0:1\\n"
        ...        "    k_0(args[0])\\n    return args")
        >>> print(timed_call_source(src, call_sites(src), 3))
        def call(args, pyfxprof_timed=pyfxprof_timed):
            # [Provenance debug handles] k_0:1
            pyfxprof_timed(3, args[0])
            return args
    """
    call_def = _call_def(source)
    assert call_def is not None  # (a graph is planned with sites only when it has one)
    start, end, found = call_def
    lines = source.splitlines()
    for k, site in enumerate(sites):
        call = CALL.match(lines[site.line])
        assert call is not None  # (call_sites matched it)
        rest = call["rest"]
        comma = "" if rest.lstrip().startswith(")") else ", "
        lines[site.line] = f"{call['head']}{TIMED_NAME}({first_column + k}{comma}{rest}"
    indent = len(found["indent"])
    body = [text[indent:] for text in lines[start + 1:end]]
    head = f"def call({found['params']}, {TIMED_NAME}={TIMED_NAME}):"
    return "\n".join([head, *body])


class CompiledExecutor(SpannedExecutor):
    """Runs a torch.compile'd callable with its graphs' kernel calls timed into one table
    (columns: the graphs' plans in order); `with executor:` swaps the timed wrappers in and
    restores Inductor's own afterwards; with several graphs the time between them is stamped
    (timing.graph_spans). With `device_events` each kernel call also records a CUDA event
    before it (and the last one after it): its device time, as eager nodes get theirs
    (timing.device_events). Follows timing.executors.Executor."""

    mode = "inductor"  # host times: kernel launches on a GPU (see docs/compiled.md)

    def __init__(self, compiled: Any, kwargs: dict, plans: list[GraphPlan],
                 device_events: bool = False) -> None:
        self.compiled, self.kwargs, self.plans = compiled, kwargs, plans
        self.calls_per_run = sum(plan.columns for plan in plans)
        self.table = RunTable(self.calls_per_run)
        self.calls = _C.timed_calls(self.table.native)
        self.calibration: Calibration = calibrate_timed_calls()
        self._first_event = RECORDER.allocate(self.calls_per_run + 1) if device_events else None
        self.device = (None if self._first_event is None
                       else DeviceEvents(self._first_event, self.calls_per_run))
        self._runs = 0
        self._plain = [plan.graph.output.current_callable for plan in plans]
        self.spans = GraphSpans(len(plans))
        self._timed = [self.spans.wrap(graph, timed) if len(plans) > 1 else timed
                       for graph, timed in enumerate(self._timed_callables())]

    def _timed_callables(self) -> list[Any]:
        timed, column, made = self.calls.timed, 0, []
        for plan, plain in zip(self.plans, self._plain):
            if not plan.sites:
                self._set(column, plain)
                made.append(functools.partial(timed, column))
            else:
                for k, target in enumerate(plan.targets):
                    self._set(column + k, target)
                made.append(_compile_call(plan, plain, column, timed))
            column += plan.columns
        return made

    def _set(self, column: int, target: Any) -> None:
        """Column `column` times `target`, with its CUDA event (and the closing one) when on."""
        if self._first_event is None:
            self.calls.set(column, target)
            return
        self.calls.set(column, target, cuda_event_id=self._first_event + column,
                       cuda_event_after=column == self.calls_per_run - 1)

    def instrumented(self, on: bool) -> None:
        """Swap the timed wrappers in (on) or Inductor's own back (off)."""
        for plan, plain, timed in zip(self.plans, self._plain, self._timed):
            plan.graph.output.current_callable = timed if on else plain

    @contextlib.contextmanager
    def uninstrumented(self) -> Iterator[None]:
        """Inductor's own wrappers inside (the compiled model's plain calls), the timed ones
        back after."""
        self.instrumented(False)
        try:
            yield
        finally:
            self.instrumented(True)

    def __enter__(self) -> "CompiledExecutor":
        self.instrumented(True)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.instrumented(False)
        self.table.abandon()

    def run(self, args: tuple, kwargs: dict | None = None) -> Any:
        """One timed call on `args` and `kwargs` (None: the executor's own)."""
        table, device = self.table, self.device
        if device is not None:
            device.begin_run()
        table.begin()
        self.spans.begin_run()
        try:
            output = self.compiled(*args, **(self.kwargs if kwargs is None else kwargs))
            if len(self.plans) > 1:  # a call that recompiled is left out, never refused
                self.spans.end_run(strict=False)
        except BaseException:
            table.abandon()
            if device is not None:
                device.abandon_run()
            raise
        table.end()
        if device is not None:
            device.end_run(self._runs)
        self._runs += 1
        return output

    def reset(self, runs: int = 0) -> None:
        """Forget every run so far (and their device times) and make room for `runs` more."""
        super().reset(runs)
        if self.device is not None:
            self.device.reset()

    def device_samples(self) -> np.ndarray | None:
        """Device ns per kernel call (runs x columns), or None without device events."""
        return None if self.device is None else self.device.samples()

    def timings(self) -> RunTimings:
        timings = self.calibration.correct(self.table.take(), self.calls_per_run)
        return self.spans.attach(timings) if len(self.plans) > 1 else timings


def _compile_call(plan: GraphPlan, plain: Any, first_column: int, timed: Any) -> Any:
    """The timed `call` of one graph, executed in (a copy of) its wrapper module's globals
    and bound like Inductor's own (a Runner's method or a module function)."""
    source = timed_call_source(plan.graph.output.source_code, plan.sites, first_column)
    namespace = {**plain.__globals__, TIMED_NAME: timed}
    code = compile(source, f"<pyfxprof timed wrapper of graph {plan.graph.index}>", "exec")
    exec(code, namespace)  # noqa: S102 - Inductor's own generated code, with timed calls
    call = namespace["call"]
    owner = getattr(plain, "__self__", None)
    return types.MethodType(call, owner) if owner is not None else call
