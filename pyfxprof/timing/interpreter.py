"""ProfilingInterpreter: the FX profiling tutorial's API (run, summary) on pyfxprof's native timers."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.fx as fx

from .. import _C
from .calibration import calibrate_paired
from ..capture.tracing import TIMED_OPS, capture, timed_nodes
from .recorder import RECORDER, runs_between_collects
from .durations import RunTimings, paired_timings


class ProfilingInterpreter(fx.Interpreter):
    """Times every node of a model with native marks around the node's own call.

    Drop-in for the tutorial's ``ProfilingInterpreter``: ``run(*args)`` as often as wanted,
    then ``summary(should_sort)``. The interpreter's bookkeeping (fetching arguments from its
    environment, looking up a call_module's submodule or a call_method's bound method) happens
    outside the timed interval; the calibrated cost of a begin/end mark pair is subtracted from
    every node. A subclass that overrides ``call_module`` (or another ``call_*`` method) gets
    its whole override timed.

    Example:
        >>> interp = ProfilingInterpreter(torch.nn.Sequential(torch.nn.Linear(4, 4)))
        >>> _ = interp.run(torch.zeros(2, 4))
        >>> "Average runtime" in interp.summary(True)
        True
    """

    def __init__(self, mod: torch.nn.Module, garbage_collect_values: bool = True) -> None:
        gm = mod if isinstance(mod, fx.GraphModule) else capture(mod).graph_module
        super().__init__(gm, garbage_collect_values)
        self.timed = timed_nodes(gm.graph)
        self._overridden_ops = {op for op in TIMED_OPS
                                if getattr(type(self), op) is not getattr(fx.Interpreter, op)}
        self._position = {node: k for k, node in enumerate(self.timed)}
        self.first_id = RECORDER.allocate(max(2 * len(self.timed), 1))
        self.calibration = calibrate_paired()
        self._intervals: list[np.ndarray] = []
        self._totals: list[np.ndarray] = []
        self._starts: list[np.ndarray] = []
        self.incomplete_runs = 0
        self._runs_per_collect = runs_between_collects(2 * len(self.timed))
        self._uncollected_runs = 0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Run the model once, timing each node; returns the model's output."""
        _C.mark_kind(self.first_id, _C.KIND_RUN_BEGIN)
        try:
            return super().run(*args, **kwargs)
        finally:
            _C.mark_kind(self.first_id, _C.KIND_RUN_END)
            self._uncollected_runs += 1
            if self._uncollected_runs >= self._runs_per_collect:  # stay far from the buffer cap
                self._collect()

    def run_node(self, n: fx.Node) -> Any:
        position = self._position.get(n)
        if position is None:
            return super().run_node(n)
        with self._set_current_node(n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            if n.op in self._overridden_ops:  # a subclass's own call_* method: time all of it
                function, args, kwargs = getattr(self, n.op), (n.target, args, kwargs), {}
            else:
                function, args = self._own_call(n, args)
            mark, begin = _C.mark, self.first_id + 2 * position
            mark(begin)
            result = function(*args, **kwargs)
            mark(begin + 1)
        return result

    def _own_call(self, n: fx.Node, args: tuple) -> tuple[Any, tuple]:
        """The callable a node runs and its positional args, with the interpreter's lookups
        (the submodule of a call_module, the bound method of a call_method) done here, before
        the timed interval, as fx.Interpreter's call_* methods would do them."""
        if n.op == "call_module":
            return self.fetch_attr(n.target), args
        if n.op == "call_method":
            return getattr(args[0], n.target), args[1:]
        if n.op == "get_attr":  # the lookup is the node's work
            return self.fetch_attr, (n.target,)
        return n.target, args

    def _collect(self) -> None:
        self._uncollected_runs = 0
        records = RECORDER.collect(self.first_id, max(2 * len(self.timed), 1))
        timings = paired_timings(records, self.first_id, len(self.timed))
        self._intervals.append(timings.intervals)
        self._totals.append(timings.run_totals)
        self._starts.append(timings.run_starts)
        self.incomplete_runs += timings.incomplete_runs

    def timings(self) -> RunTimings:
        """Raw durations of every complete run so far (overhead not subtracted)."""
        self._collect()
        n = len(self.timed)
        intervals = np.concatenate(self._intervals) if self._intervals else np.empty((0, n), np.int64)
        totals = np.concatenate(self._totals) if self._totals else np.empty(0, np.int64)
        starts = np.concatenate(self._starts) if self._starts else np.empty(0, np.int64)
        return RunTimings(intervals, totals, starts, self.incomplete_runs)

    def reset(self) -> None:
        """Forget the runs so far (e.g. after warm-up)."""
        self._collect()
        self._intervals, self._totals, self._starts = [], [], []
        self.incomplete_runs = 0

    def node_seconds(self) -> np.ndarray:
        """Overhead-corrected node times in seconds, runs x nodes."""
        corrected = self.timings().intervals - self.calibration.overhead_ns
        return np.clip(corrected, 0, None) / 1e9

    @property
    def total_runtime_sec(self) -> list[float]:
        """Per-run total time in seconds, as in the tutorial."""
        totals = self.timings().run_totals - 2 * len(self.timed) * self.calibration.overhead_ns
        return (np.clip(totals, 0, None) / 1e9).tolist()

    @property
    def runtimes_sec(self) -> dict[fx.Node, list[float]]:
        """Per-node list of run times in seconds, keyed by node, as in the tutorial."""
        seconds = self.node_seconds()
        return {node: seconds[:, k].tolist() for k, node in enumerate(self.timed)}

    def summary(self, should_sort: bool = False) -> str:
        """The tutorial's table: Op type, Op, Average runtime (s), Pct total runtime.

        Sorted by average runtime, largest first, when `should_sort`.
        """
        seconds = self.node_seconds()
        if seconds.shape[0] == 0:
            return "no runs recorded yet: call run(*args) first"
        mean_node = seconds.mean(axis=0)
        mean_total = float(np.mean(self.total_runtime_sec)) or float(mean_node.sum()) or 1.0
        rows = [(node.op, node.name, float(mean_node[k]), float(mean_node[k] / mean_total * 100))
                for k, node in enumerate(self.timed)]
        if should_sort:
            rows.sort(key=lambda row: row[2], reverse=True)
        return _format_summary(rows)


def _format_summary(rows: list[tuple[str, str, float, float]]) -> str:
    headers = ("Op type", "Op", "Average runtime (s)", "Pct total runtime")
    cells = [(op, name, f"{avg:.9f}", f"{pct:.6f}") for op, name, avg, pct in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths)).rstrip() for cell in cells]
    return "\n".join(lines)
