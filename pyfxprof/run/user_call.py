"""The user's own call: a graph replays the model's ops without the Python around them, so
every profile also times the call the user makes, in two ways (docs/profile.md):

- each timed run is made *inside* the user's call (``AroundRuns``): the model is called as the
  user calls it (``Module.__call__``, its hooks) with its ``forward`` running the instrumented
  graph for that one call, so a run's total and its outside-the-graph row come from the same
  invocation as its nodes (DESIGN.md: two calls are never subtracted run by run);
- the plain call (the model's own forward, uninstrumented, on a copy of the inputs, in the same
  modes), timed after the runs (``UserCall``), gives the level: its median beyond the median
  of the calls around the runs (the Python the graph replaced) is added to every run's row.

A model whose call never reaches its ``forward`` (its own ``__call__``), or whose call fails
around the graph, is timed plainly only: its outside row is then one median, the same in every
run (data.outside_graph)."""

from __future__ import annotations

import contextlib
import copy
import contextvars
import time
from typing import Any, Callable, Iterator

import numpy as np
import torch

from ..capture.inputs import BoundInputs, split_inputs
from ..capture.inputs import copied_inputs
from ..data.outside_graph import with_outside_graph
from ..data.profile import Profile
from ..errors import first_line
from .python_breakdown import python_breakdown

#: Untimed plain calls before the first timed one when no breakdown runs (the breakdown's
#: profiled calls warm the call otherwise; the model has run already: the analysis run, the
#: warm-up and timed runs).
WARMUP_CALLS = 1
#: The model had no ``forward`` attribute of its own (AroundRuns restores it so).
_MISSING = object()
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
    Python, where the profiler sees them), or None. ``around``: the timed runs made inside
    the call (AroundRuns, made by ``around_runs``), or None. `plainly`, `breakdown`: see
    after_runs. `bound`: the inputs already copied (made outside inference mode, so that a
    compiled model's guards see tensors like the user's), else a copy made here.

    Example:
        >>> call = UserCall(torch.nn.ReLU(), (torch.zeros(4),), "cpu")
        >>> call.warm(); call.time_once(); call.time_once()
        >>> len(call.walls_ns), call.error
        (2, None)
    """

    def __init__(self, model: torch.nn.Module, example_inputs: Any, device: str,
                 graph: tuple | None = None, plainly: Callable[[], Any] | None = None,
                 breakdown: bool = True, bound: BoundInputs | None = None) -> None:
        self.model = model
        self.graph = graph
        #: A context the plain calls are made in (a compiled model's: Inductor's own
        #: wrappers, not the timed ones), or None; `breakdown`: measure the Python breakdown.
        self.plainly, self.breakdown = plainly, breakdown
        self.bound = _as_given(model, example_inputs) if bound is None else bound
        self.sync = torch.cuda.synchronize if device.startswith("cuda") else None
        self.walls_ns: list[int] = []
        self.functions: list[dict] = []
        self.error: str | None = None
        self.around: AroundRuns | None = None
        #: Calls around the graph timed beside the plain calls, one per plain call (after_runs).
        self.paired_ns: list[int] = []

    def __call__(self) -> Any:
        """One plain, untimed call."""
        return self.bound.call(self.model)

    def around_runs(self, graph_run: Callable[[tuple], Any]) -> Callable[[tuple], Any]:
        """The run to time instead of `graph_run` (an executor's ``run``): each one made
        inside the user's call (AroundRuns), kept as ``around``."""
        self.around = AroundRuns(self.model, self.bound, self.sync, graph_run)
        return self.around.run

    def warm(self) -> None:
        """WARMUP_CALLS untimed calls (an error is kept, as time_once keeps it)."""
        for _ in range(WARMUP_CALLS):
            if not self._guarded(self):
                return

    def after_runs(self, graph_run: Callable[[], Any] | None, runs: int,
                   args: tuple | None = None) -> None:
        """After the timed runs: the breakdown (prepare, whose profiled calls warm the plain
        call; with `breakdown` False one plain call warms it), then the timed plain calls,
        inside `plainly()` when given: with calls ``around`` the graph that work (made on
        `args`), ceil(runs / 2) of them, each beside one more call around the graph, the
        pair's order alternating, kept in ``paired_ns`` (the level's pairs:
        data.outside_graph.call_level); else `runs`, one after the other. The timed runs
        are never interleaved with plain calls: a model whose cost depends on how many calls
        came before (a spike every k-th call) keeps its pattern in the runs. No pairs inside
        `plainly` (a compiled call's: its level is not in the row, with_compiled_call)."""
        around = self.around if self.plainly is None else None
        with self.plainly() if self.plainly is not None else contextlib.nullcontext():
            self.prepare(graph_run if self.breakdown else None)
            if args is None or around is None or around.failure is not None:
                for _ in range(runs):
                    self.time_once()
                return
            kept, around.walls_ns = around.walls_ns, self.paired_ns
            try:
                for pair in range(-(-runs // 2)):
                    if pair % 2:
                        around.run(args)
                    self.time_once()
                    if not pair % 2:
                        around.run(args)
            finally:
                around.walls_ns = kept

    def prepare(self, graph_run: Callable[[], Any] | None) -> None:
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


class AroundRuns:
    """Each instrumented run made inside one user's call: ``run(args)`` calls the model as
    the user does (``Module.__call__``, its hooks, on the copied inputs `bound`) with its
    ``forward`` answering that one call with ``graph_run(args)`` (the user's own forward is
    back before the graph runs, so a nested call of it is the model's), and keeps the call's
    wall ns in ``walls_ns``: a run's nodes and its call are one invocation. When a call
    never reaches its forward (a model's own ``__call__``) or raises around the graph,
    ``failure`` says so and the runs are `graph_run`'s alone from then on (``walls_ns``
    then means nothing). An error of the graph's run itself passes through.

    Example:
        >>> relu, runs = torch.nn.ReLU(), []
        >>> around = AroundRuns(relu, BoundInputs((torch.ones(2),)), None,
        ...                     lambda args: runs.append(args) or args[0])
        >>> around.run(("graph's",)), runs, len(around.walls_ns), around.failure
        ("graph's", [("graph's",)], 1, None)
        >>> "forward" in relu.__dict__  # the model's own forward again
        False
    """

    def __init__(self, model: torch.nn.Module, bound: BoundInputs,
                 sync: Callable[[], None] | None,
                 graph_run: Callable[[tuple], Any]) -> None:
        self.model, self.bound, self.sync, self.graph_run = model, bound, sync, graph_run
        self.walls_ns: list[int] = []
        self.failure: str | None = None
        self._args: tuple = ()
        self._saved: Any = _MISSING
        self._stage = 0  # 0: the graph not reached, 1: running, 2: ran

    def run(self, args: tuple) -> Any:
        """One timed run (inside the user's call while ``failure`` is None)."""
        if self.failure is not None:
            return self.graph_run(args)
        model, sync = self.model, self.sync
        self._args, self._stage = args, 0
        self._saved = model.__dict__.get("forward", _MISSING)
        model.__dict__["forward"] = self._forward
        output, wall = None, 0
        try:
            if sync is not None:
                sync()
            start = time.perf_counter_ns()
            output = self.bound.call(model)
            if sync is not None:
                sync()
            wall = time.perf_counter_ns() - start
        except Exception as error:
            if self._stage == 1:
                raise  # the graph's run raised: the model's error, named by the caller
            self.failure = (f"your call raised around the graph ({type(error).__name__}: "
                            f"{first_line(error)})")
        finally:
            self._restore()
        if self._stage != 2 and self.failure is None:
            self.failure = "your model's call does not reach its forward"
        if self.failure is not None:
            return self.graph_run(args) if self._stage == 0 else output
        self.walls_ns.append(wall)
        return output

    def _forward(self, *_args: Any, **_kwargs: Any) -> Any:
        """The model's forward for one call: the graph's run on the captured arguments."""
        self._restore()
        self._stage = 1
        output = self.graph_run(self._args)
        self._stage = 2
        return output

    def _restore(self) -> None:
        """The model's forward as it was (its own, or an attribute set before)."""
        if self._saved is _MISSING:
            self.model.__dict__.pop("forward", None)
        else:
            self.model.__dict__["forward"] = self._saved


def with_user_call(profile: Profile, call: UserCall | None,
                   stated: Callable[..., Profile] | None = None,
                   spare: np.ndarray | None = None) -> Profile:
    """`profile` stated against the user's call by `stated(profile, plain calls, ...,
    around_ns=each run's own call)` (default: data.outside_graph.with_outside_graph, with the
    breakdown's functions; None when the runs were not made inside the calls: AroundRuns,
    and ``meta["call"]["not_per_run"]`` says why): itself without a call (training steps),
    with ``meta["call"]["error"]`` when the plain call failed. `spare`: the run table's array
    whose first columns are the samples (RunTimings.spare), which the row is written into."""
    if call is None:
        return profile
    if call.error is not None or not call.walls_ns:
        profile.meta["call"] = {"error": call.error or "not timed"}
        return profile
    around = call.around
    failure = "the runs were not made inside your call" if around is None else around.failure
    walls = None if failure is not None or around is None else around.walls_ns
    paired = call.paired_ns if walls is not None and len(call.paired_ns) == len(
        call.walls_ns) else None
    profile = (with_outside_graph(profile, call.walls_ns, call.functions, walls, spare, paired)
               if stated is None else stated(profile, call.walls_ns, around_ns=walls,
                                             paired_ns=paired))
    if failure is not None:
        profile.meta["call"]["not_per_run"] = failure
    return profile
