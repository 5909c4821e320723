"""ProfilingInterpreter: the FX profiling tutorial's API (run, summary) on pyfxprof's native timers.

When a subclass overrides no node-level method, `run` executes the codegen-instrumented graph
underneath (the same native timed calls, at codegen's cost); otherwise it interprets node by node,
calling the subclass's methods, with each node's own call timed natively.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
import torch.fx as fx

from .native import _C
from ..capture.node_targets import target_path
from ..capture.tracing import capture, timed_nodes
from .calibration import calibrate_timed_calls
from .durations import RunTimings
from .instrument import instrument, node_callable
from .run_table import RunTable

#: fx.Interpreter methods whose override makes run() interpret node by node.
NODE_LEVEL_METHODS = ("run_node", "placeholder", "get_attr", "call_function", "call_method",
                      "call_module", "output", "fetch_args_kwargs_from_env", "fetch_attr",
                      "map_nodes_to_values")


class ProfilingInterpreter(fx.Interpreter):
    """Times every node of a model with native timers around the node's own call.

    Drop-in for the tutorial's ``ProfilingInterpreter``: ``run(*args)`` as often as wanted,
    then ``summary(should_sort)``, ``runtimes_sec`` and ``total_runtime_sec``; the tutorial's
    own class subclasses it unchanged. ``runtimes_sec`` (a dict keyed by torch.fx.Node) and
    ``total_runtime_sec`` (a list) behave as plain attributes: the same containers on every
    access, which a subclass may assign, append to or fill itself; pyfxprof fills them from its
    native timings (on access, after each run) until a subclass writes its own numbers (or, for
    the totals, overrides run()), and ``summary()`` shows what they hold. The
    interpreter's bookkeeping (fetching arguments, looking up a call_module's submodule)
    happens outside the timed call; the calibrated cost of a timed call is subtracted from
    every node. A subclass that overrides ``call_module`` (or another ``call_*`` method) gets
    its whole override timed.

    Example:
        >>> interp = ProfilingInterpreter(torch.nn.Sequential(torch.nn.Linear(4, 4)))
        >>> _ = interp.run(torch.zeros(2, 4))
        >>> "Average runtime" in interp.summary(True)
        True
    """

    graph: fx.Graph  # (fx.Interpreter sets it from its module's, typed Tensor | Module)

    def __init__(self, mod: torch.nn.Module, garbage_collect_values: bool = True) -> None:
        gm = mod if isinstance(mod, fx.GraphModule) else capture(mod).graph_module_or_raise()
        super().__init__(gm, garbage_collect_values)
        self.timed = timed_nodes(gm.graph)
        self.table = RunTable(len(self.timed))
        self.calibration = calibrate_timed_calls()
        overridden = {name for name in NODE_LEVEL_METHODS
                      if getattr(type(self), name) is not getattr(ProfilingInterpreter, name)}
        self.interpreted = bool(overridden)
        self._fast = None if self.interpreted else instrument(gm, self.table.native)
        self._position = {node: k for k, node in enumerate(self.timed)}
        self._calls = _C.timed_calls(self.table.native)
        self._timed = self._calls.timed
        self._takes_target = [self._set_timed_call(gm, k, node, overridden)
                              for k, node in enumerate(self.timed)]
        general_fetch = overridden & {"fetch_args_kwargs_from_env", "map_nodes_to_values"}
        self._plans = {node: None if general_fetch else _flat_plan(node) for node in self.timed}
        self._kept: RunTimings | None = None
        self._owns_totals = type(self).run is ProfilingInterpreter.run
        self._forget_runs()

    def _set_timed_call(self, gm: fx.GraphModule, k: int, node: fx.Node,
                        overridden: set[str]) -> bool:
        """Set what timed(k, ...) calls for node k; True when it takes the call_* signature
        (target, args, kwargs)."""
        if node.op in overridden:  # a subclass's own call_* method: time all of it
            self._calls.set(k, getattr(self, node.op))
            return True
        if node.op == "get_attr":  # the lookup is the node's work
            self._calls.set(k, functools.partial(self.fetch_attr, target_path(node)))
            return False
        target, method = node_callable(gm, node)
        self._calls.set(k, target, method)
        return False

    def run(self, *args: Any, initial_env: dict | None = None,
            enable_io_processing: bool = True) -> Any:
        """Run the model once, timing each node; returns the model's output."""
        self.table.begin()
        self._running = True
        try:
            if self._fast is not None and initial_env is None and enable_io_processing:
                output = self._fast(*args)
            else:
                output = self._interpret(args, initial_env, enable_io_processing)
        except BaseException:
            self.table.abandon()
            raise
        finally:
            self._running = False
        self.table.end()
        self._runs_done += 1
        return output

    def _interpret(self, args: tuple, initial_env: dict | None, io: bool) -> Any:
        """fx.Interpreter.run's loop, without its per-node progress bar and logging."""
        self.env = env = initial_env if initial_env is not None else {}
        if io:
            args = self.graph.process_inputs(*args)
        self.args_iter = iter(args)
        last_uses = self.user_to_last_uses if self.garbage_collect_values else {}
        run_node = self.run_node
        for node in self.graph.nodes:
            if node in env:
                continue
            env[node] = run_node(node)
            for gone in last_uses.get(node, ()):
                del env[gone]
            if node.op == "output":
                return self.graph.process_outputs(env[node]) if io else env[node]
        return None

    def run_node(self, n: fx.Node) -> Any:
        position = self._position.get(n)
        if position is None:
            return super().run_node(n)
        plan = self._plans[n]
        if plan is None:
            args, kwargs = self.fetch_args_kwargs_from_env(n)
        else:
            env = self.env
            args = tuple([env[a] if a.__class__ is fx.Node else a for a in plan[0]])
            kwargs = {k: env[v] if v.__class__ is fx.Node else v for k, v in plan[1].items()}
        if self._takes_target[position]:
            return self._timed(position, n.target, args, kwargs)
        return self._timed(position, *args, **kwargs)

    def timings(self) -> RunTimings:
        """Raw durations of every complete run so far (overhead not subtracted)."""
        fresh = self.table.take()
        kept = self._kept
        if kept is not None:
            between = (None if kept.between_nodes is None or fresh.between_nodes is None
                       else np.concatenate([kept.between_nodes, fresh.between_nodes]))
            fresh = RunTimings(np.concatenate([kept.intervals, fresh.intervals]),
                               np.concatenate([kept.run_totals, fresh.run_totals]),
                               np.concatenate([kept.run_starts, fresh.run_starts]),
                               kept.incomplete_runs + fresh.incomplete_runs, between)
        self._kept = fresh
        return fresh

    def reset(self) -> None:
        """Forget the runs so far (e.g. after warm-up)."""
        self.table.clear()
        self._kept = None
        self._forget_runs()

    def _forget_runs(self) -> None:
        """Empty containers behind total_runtime_sec / runtimes_sec, filled natively again."""
        self._totals: list[float] = []
        self._runtimes: dict[fx.Node, list[float]] = {}
        self._filled = 0  # runs pyfxprof wrote into each list of _runtimes
        self._owns_runtimes = True
        self._runs_done = self._synced = self._rows = 0
        self._running = False

    def _sync(self) -> None:
        """Write the native timings of runs finished since the last access into the two
        containers, unless someone else writes them: `runtimes_sec` once it holds entries
        pyfxprof did not put there, `total_runtime_sec` when a subclass overrides run()
        (its run() measures the whole, as the tutorial's does)."""
        if self._synced == self._runs_done or self._running:
            return  # nothing new, or a run in progress (its row is not complete)
        self._synced = self._runs_done
        timings = self.timings()
        first, self._rows = self._rows, timings.intervals.shape[0]
        self._owns_runtimes = self._owns_runtimes and all(
            node in self._position and len(times) == self._filled
            for node, times in self._runtimes.items())
        overhead = self.calibration.overhead_ns
        if self._owns_runtimes:
            seconds = np.clip(timings.intervals[first:] - overhead, 0, None) / 1e9
            for k, node in enumerate(self.timed):
                self._runtimes.setdefault(node, []).extend(seconds[:, k].tolist())
            self._filled += seconds.shape[0]
        if self._owns_totals:
            totals = timings.run_totals[first:] - len(self.timed) * overhead
            self._totals.extend((np.clip(totals, 0, None) / 1e9).tolist())

    @property
    def incomplete_runs(self) -> int:
        """Runs that raised (or missed a node), left out of the timings."""
        return self.timings().incomplete_runs

    def node_seconds(self) -> np.ndarray:
        """Overhead-corrected node times in seconds, runs x nodes (pyfxprof's native timings,
        whatever a subclass writes into runtimes_sec)."""
        corrected = self.timings().intervals - self.calibration.overhead_ns
        return np.clip(corrected, 0, None) / 1e9

    @property
    def total_runtime_sec(self) -> list[float]:
        """Per-run total time in seconds, as in the tutorial: a list pyfxprof fills from its
        native timings; a subclass may assign it or append to it (a subclass overriding run()
        fills it itself)."""
        self._sync()
        return self._totals

    @total_runtime_sec.setter
    def total_runtime_sec(self, value: list[float]) -> None:
        self._sync()
        self._totals = value

    @property
    def runtimes_sec(self) -> dict[fx.Node, list[float]]:
        """Per-node list of run times in seconds, keyed by torch.fx.Node, as in the tutorial:
        a dict pyfxprof fills from its native timings until someone else writes into it (a
        subclass's run_node, as the tutorial's); the same dict on every access."""
        self._sync()
        return self._runtimes

    @runtimes_sec.setter
    def runtimes_sec(self, value: dict[fx.Node, list[float]]) -> None:
        self._sync()
        self._runtimes, self._filled, self._owns_runtimes = value, 0, True

    def summary(self, should_sort: bool = False) -> str:
        """The tutorial's table: Op type, Op, Average runtime (s), Pct total runtime.

        Sorted by average runtime, largest first, when `should_sort`.
        """
        runtimes = {node: times for node, times in self.runtimes_sec.items() if times}
        if not runtimes:
            return "no runs recorded yet: call run(*args) first"
        means = {node: float(np.mean(times)) for node, times in runtimes.items()}
        totals = self.total_runtime_sec
        mean_total = float(np.mean(totals)) if totals else sum(means.values())
        mean_total = mean_total or 1.0
        rows = [(node.op, node.name, mean, mean / mean_total * 100) for node, mean in means.items()]
        if should_sort:
            rows.sort(key=lambda row: row[2], reverse=True)
        return _format_summary(rows)


def _flat_plan(node: fx.Node) -> tuple[tuple, dict] | None:
    """node's (args, kwargs) when each is a Node or a plain constant (fetched without
    torch.fx's map_arg), else None (nested containers: fetched the general way)."""
    values = list(node.args) + list(node.kwargs.values())
    if any(isinstance(v, (list, tuple, dict, slice)) for v in values):
        return None
    return tuple(node.args), dict(node.kwargs)


def _format_summary(rows: list[tuple[str, str, float, float]]) -> str:
    headers = ("Op type", "Op", "Average runtime (s)", "Pct total runtime")
    cells = [(op, name, f"{avg:.9f}", f"{pct:.6f}") for op, name, avg, pct in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths)).rstrip() for cell in cells]
    return "\n".join(lines)
