"""The user's own call, timed between profile()'s instrumented runs: a graph replays the
model's ops without the Python around them, so every profile also times the call the user
makes (the model's forward called plainly, uninstrumented, on a copy of the inputs, in the
same modes) and states the difference as a row (data.outside_graph; docs/profile.md)."""

from __future__ import annotations

import contextlib
import copy
import contextvars
import time
from typing import Any, Iterator

import torch

from ..capture.inputs import BoundInputs, split_inputs
from ..capture.ladder import copied_inputs
from ..data.outside_graph import with_outside_graph
from ..data.profile import Profile
from ..errors import first_line
from .python_breakdown import python_breakdown

#: Untimed plain calls before the first timed one when no breakdown runs (the breakdown's
#: profiled calls warm the call otherwise; the model has run already: the analysis run, the
#: warm-up runs).
WARMUP_CALLS = 1
#: False inside graph_runs_only(): profile() times the graph's runs alone.
_TIMED = contextvars.ContextVar("pyfxprof_user_call_timed", default=True)


def user_call_timed() -> bool:
    """Whether profile() times the user's call beside the graph's runs (True unless inside
    graph_runs_only)."""
    return _TIMED.get()


@contextlib.contextmanager
def graph_runs_only() -> Iterator[None]:
    """profile() calls inside time the graph's runs alone: no user call between them and no
    breakdown of its Python (pyfxprof.compare's blocks, whose analysis is of the graph's
    rows: the user call would double each block's work and cost ~0.5 s of breakdown each).

    Example:
        >>> with graph_runs_only():
        ...     user_call_timed()
        False
    """
    token = _TIMED.set(False)
    try:
        yield
    finally:
        _TIMED.reset(token)


def _as_given(model: torch.nn.Module, example_inputs: Any) -> BoundInputs:
    """A copy of the inputs as the user passes them (not bound to the forward's signature:
    a decorated forward may fill in arguments of its own); bound when they refuse a copy."""
    try:
        return BoundInputs(*copy.deepcopy(split_inputs(example_inputs)))
    except Exception:  # e.g. a tensor autograd made: copied value by value, bound
        return copied_inputs(model, example_inputs)


class UserCall:
    """Times ``model(*inputs)`` one call at a time (``time_once``), on a copy of the inputs;
    a call that raises stops the timing and is kept as ``error``. `graph`: (the captured
    GraphModule, its arguments), run plainly for the breakdown (its targets then run from
    Python, where the profiler sees them), or None.

    Example:
        >>> call = UserCall(torch.nn.ReLU(), (torch.zeros(4),), "cpu")
        >>> call.warm(); call.time_once(); call.time_once()
        >>> len(call.walls_ns), call.error
        (2, None)
    """

    def __init__(self, model: torch.nn.Module, example_inputs: Any, device: str,
                 graph: tuple | None = None) -> None:
        self.model = model
        self.graph = graph
        self.bound = _as_given(model, example_inputs)
        self.sync = torch.cuda.synchronize if device.startswith("cuda") else None
        self.walls_ns: list[int] = []
        self.functions: list[dict] = []
        self.error: str | None = None
        self.interleaved = True

    def __call__(self) -> Any:
        """One plain, untimed call."""
        return self.bound.call(self.model)

    def warm(self) -> None:
        """WARMUP_CALLS untimed calls (an error is kept, as time_once keeps it)."""
        for _ in range(WARMUP_CALLS):
            if not self._guarded(self):
                return

    def before_runs(self, graph_run, warmup: int) -> None:
        """Before the timed runs: with `warmup` runs done, the calls will be interleaved
        with the timed runs, so warm them and measure the breakdown now (prepare). Without
        warm-up runs the timed runs are the model's first calls, whose cost the warm-up
        report reads: the call is then timed after them (after_runs)."""
        self.interleaved = warmup > 0
        if self.interleaved:
            self.prepare(graph_run)

    def after_runs(self, runs: int) -> None:
        """After the timed runs: when not interleaved, the breakdown (on the plain graph
        only) and `runs` timed calls."""
        if not self.interleaved:
            self.prepare(None)
            for _ in range(runs):
                self.time_once()

    def prepare(self, graph_run) -> None:
        """Measure which Python functions the call spends beyond one run of the plain graph
        (else one `graph_run()`: the executor's; None: no breakdown, the call warmed instead)
        (run.python_breakdown, whose profiled calls warm the call; untimed; a failure leaves
        the breakdown empty, and a failing call its error, as warm() keeps it)."""
        if self.graph is not None and self.graph[0] is not None:
            module, args = self.graph
            graph_run = lambda: module.forward(*args)  # noqa: E731 (as the executors call it)
        if graph_run is None:
            self.warm()
            return
        try:
            self.functions = python_breakdown(self, graph_run)
        except Exception:  # the breakdown is a guide: the timings stand without it
            self.functions = []
            self._guarded(self)  # the call's own error, if it is the call that failed

    def time_once(self) -> None:
        """One timed call appended to ``walls_ns`` (nothing once a call has failed)."""
        if self.error is not None:
            return
        sync = self.sync
        if sync is not None:
            sync()
        start = time.perf_counter_ns()
        if self._guarded(self):
            if sync is not None:
                sync()
            self.walls_ns.append(time.perf_counter_ns() - start)

    def _guarded(self, call) -> bool:
        try:
            call()
        except Exception as error:  # the user's model: say why, keep the graph's Profile
            self.error = f"{type(error).__name__}: {first_line(error)}"
            return False
        return True


def with_user_call(profile: Profile, call: UserCall | None) -> Profile:
    """`profile` stated against the user's call (data.outside_graph.with_outside_graph):
    itself without a call (training steps), with ``meta["call"]["error"]`` when the call
    failed."""
    if call is None:
        return profile
    if call.error is not None or not call.walls_ns:
        profile.meta["call"] = {"error": call.error or "not timed"}
        return profile
    profile = with_outside_graph(profile, call.walls_ns, call.functions)
    profile.meta["call"]["interleaved"] = call.interleaved
    return profile
