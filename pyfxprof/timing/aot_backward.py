"""Backward time per forward node through AOTAutograd: the captured graph split into an aten
forward graph and an aten backward graph, each run with one native timed call per aten node (the
codegen executor), every aten node joined to the captured node it comes from."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import torch
import torch.fx as fx
from torch._functorch import config as functorch_config
from torch._functorch._aot_autograd.utils import make_boxed_func
from torch._functorch.aot_autograd import aot_module_simplified

from .native import _C
from ..capture.outputs import flatten, unfold_dataclass_nodes
from ..capture.tracing import timed_nodes
from .durations import RunTimings
from .executors import make_executor
from .recorder import RECORDER, Records

if TYPE_CHECKING:
    from .executors import Executor

#: Marks of one step, in the order they are taken (each once per step).
_FORWARD, _LOSS_BEGIN, _LOSS_END, _BACKWARD_BEGIN, _BACKWARD_END = range(5)


def source_rows(graph: fx.Graph, names: dict[str, int], default: int) -> np.ndarray:
    """For each timed node of an AOTAutograd forward graph, the row of the captured node it
    was traced from (the first level of its ``meta["from_node"]``, looked up in `names`),
    else `default`.

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.ReLU())
        >>> source_rows(gm.graph, {}, 9).tolist()
        [9]
    """
    rows = []
    for node in timed_nodes(graph):
        sources = node.meta.get("from_node") or ()
        rows.append(next((names[s.name] for s in sources if s.name in names), default))
    return np.array(rows, dtype=np.int64)


def backward_rows(forward: fx.Graph, forward_rows: np.ndarray, backward: fx.Graph,
                  default: int) -> np.ndarray:
    """For each timed node of the backward graph, the row of the forward node it
    differentiates: the first forward node with the same ``meta["seq_nr"]`` (the autograd
    sequence number AOTAutograd stamps on both; later forward nodes with that number created
    no autograd node), else `default`.

    Example:
        >>> g = fx.symbolic_trace(torch.nn.ReLU()).graph
        >>> backward_rows(g, np.array([0]), g, 5).tolist()
        [5]
    """
    by_number: dict = {}
    for node, row in zip(timed_nodes(forward), forward_rows.tolist()):
        by_number.setdefault(node.meta.get("seq_nr"), row)
    by_number.pop(None, None)
    return np.array([by_number.get(node.meta.get("seq_nr"), default)
                     for node in timed_nodes(backward)], dtype=np.int64)


def _flat_outputs(gm: fx.GraphModule) -> tuple[fx.GraphModule, Any]:
    """A GraphModule like `gm` (sharing its modules and parameters) returning the tensors of
    `gm`'s output as a flat tuple, as AOTAutograd needs, and the function rebuilding `gm`'s
    output from that tuple (dataclass outputs included: capture/outputs.py)."""
    graph = copy.deepcopy(gm.graph)
    output = next(node for node in graph.nodes if node.op == "output")
    leaves, rebuild_tree = flatten(unfold_dataclass_nodes(output.args[0]))
    where = [k for k, leaf in enumerate(leaves) if isinstance(leaf, fx.Node)]
    output.args = (tuple(leaves[k] for k in where),)
    flat = fx.GraphModule(gm, graph, type(gm).__name__)

    def rebuild(values):
        rebuilt = list(leaves)
        for k, value in zip(where, values):
            rebuilt[k] = value
        return rebuild_tree(rebuilt)
    return flat, rebuild


class AotStep:
    """The captured graph compiled by AOTAutograd with timed aten graphs: `step` runs the
    forward (timed per aten node), the loss and the backward, which the autograd engine runs
    as one node executing the timed aten backward graph; `durations` joins both graphs'
    samples to the captured graph's timed nodes (n_nodes rows, then the (loss),
    (accumulate grad) and (autograd engine) rows).

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
        >>> step = AotStep(gm, (torch.ones(1, 2),), 2, "codegen")
        >>> step.reset(1); _ = step.step((torch.ones(1, 2),), lambda y: y.sum())
        >>> step.durations().intervals.shape
        (1, 5)
    """

    def __init__(self, gm: fx.GraphModule, args: tuple, n_nodes: int, mode: str) -> None:
        self.n_nodes, self.mode, self._runs = n_nodes, mode, 0
        self.names = {node.name: k for k, node in enumerate(timed_nodes(gm.graph))}
        self.forward: Executor | None = None
        self.backward: Executor | None = None
        self.backward_samples: np.ndarray | None = None
        self.backward_starts: np.ndarray | None = None  # the graph's start in each step
        self.first = RECORDER.allocate(5)
        flat, self._rebuild = _flat_outputs(gm)
        with functorch_config.patch(force_non_lazy_backward_lowering=True):  # not in run 1
            self._compiled = aot_module_simplified(flat, list(args),
                                                   fw_compiler=self._on_forward,
                                                   bw_compiler=self._on_backward)

    def _on_forward(self, gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        self.forward_rows = source_rows(gm.graph, self.names, self.n_nodes + 2)
        self.forward_graph = gm.graph
        executor = self.forward = make_executor(self.mode, gm, len(self.forward_rows))
        executor.reset(self._runs)
        return make_boxed_func(lambda *args: executor.run(args))

    def _on_backward(self, gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
        self.backward_rows = backward_rows(self.forward_graph, self.forward_rows,
                                           gm.graph, self.n_nodes + 2)
        executor = self.backward = make_executor(self.mode, gm, len(self.backward_rows))
        executor.reset(self._runs)
        return make_boxed_func(lambda *args: executor.run(args))

    def run(self, args: tuple) -> Any:
        """The timed forward alone (its output's backward runs the timed backward graph)."""
        return self._rebuild(self._compiled(*args))

    def step(self, args: tuple, loss_fn: Any) -> Any:
        """One marked step: forward, `loss_fn` of its output, backward; returns the output.
        The leaves' ``.grad`` is left as the backward set it (the caller clears it)."""
        mark, first = _C.mark, self.first
        mark(first + _FORWARD)
        output = self.run(args)
        mark(first + _LOSS_BEGIN)
        loss = loss_fn(output)
        mark(first + _LOSS_END)
        mark(first + _BACKWARD_BEGIN)
        loss.backward()
        mark(first + _BACKWARD_END)
        return output

    def failed_node(self, names: list[str]) -> str | None:
        """After a step raised: the name (from `names`, the captured graph's rows) of the
        node whose aten node the forward raised in; None when the forward finished (the
        loss or the backward raised).

        Example:
            >>> gm = fx.symbolic_trace(torch.nn.Linear(2, 2))
            >>> AotStep(gm, (torch.ones(1, 2),), 1, "codegen").failed_node(["linear"])
        """
        aten = [node.name for node in timed_nodes(self.forward_graph)]
        failed = self._executors()[0].failed_node(aten)
        row = None if failed is None else int(self.forward_rows[aten.index(failed)])
        return names[row] if row is not None and row < len(names) else None

    def reset(self, runs: int = 0) -> None:
        """Forget the steps so far; room for `runs` more."""
        self._runs = runs
        for executor in (self.forward, self.backward):
            if executor is not None:
                executor.reset(runs)
        RECORDER.collect(self.first, 5)

    def _executors(self) -> tuple[Executor, Executor]:
        """(forward, backward) graphs' executors: AOTAutograd compiled both in __init__
        (non-lazy backward lowering)."""
        assert self.forward is not None and self.backward is not None
        return self.forward, self.backward

    def backward_order(self) -> list[int]:
        """The rows in the order the backward runs them: (autograd engine), the forward
        nodes' rows in the order of their first node in the backward graph, (accumulate
        grad)."""
        engine, accumulate = self.n_nodes + 2, self.n_nodes + 1
        rows = dict.fromkeys(r for r in self.backward_rows.tolist() if r != engine)
        return [engine, *rows, accumulate]

    def overhead_ns(self) -> float:
        """The timed call's calibrated cost (both graphs run the same timed calls)."""
        return self._executors()[0].calibration.overhead_ns

    def durations(self) -> RunTimings:
        """The steps since reset: forward ns per row (runs, n_nodes + 3), step totals (first
        mark to last, the timed calls' cost taken off) and step starts; the backward ns per
        row are left in ``backward_samples``."""
        forward, backward = (executor.timings() for executor in self._executors())
        marks = _step_marks(RECORDER.collect(self.first, 5), self.first)
        runs = min(len(marks), forward.intervals.shape[0], backward.intervals.shape[0])
        marks, width = marks[:runs], self.n_nodes + 3
        cost = self.overhead_ns() * (forward.intervals.shape[1] + backward.intervals.shape[1])
        rows = _per_row(forward.intervals[:runs], self.forward_rows, width)
        rows[:, self.n_nodes] += marks[:, _LOSS_END] - marks[:, _LOSS_BEGIN]
        rows[:, self.n_nodes + 2] += np.maximum(  # AOTAutograd's wrapper around the graph
            marks[:, _LOSS_BEGIN] - marks[:, _FORWARD] - forward.run_totals[:runs]
            - self.overhead_ns() * forward.intervals.shape[1], 0)
        self.backward_samples = self._backward_rows(backward, marks, width)
        self.backward_starts = backward.run_starts[:runs] - marks[:, _FORWARD]
        totals = np.maximum(marks[:, _BACKWARD_END] - marks[:, _FORWARD] - cost, 0)
        return RunTimings(np.rint(rows).astype(np.int64), np.rint(totals).astype(np.int64),
                          marks[:, _FORWARD].copy(), forward.incomplete_runs)

    def _backward_rows(self, backward: RunTimings, marks: np.ndarray, width: int) -> np.ndarray:
        """Backward ns per row: the graph's nodes to their forward rows; the engine's work
        before the graph (graph task, the loss's own backward) to (autograd engine), after it
        (gradients accumulated into the leaves) to (accumulate grad)."""
        runs = len(marks)
        rows = _per_row(backward.intervals[:runs], self.backward_rows, width)
        raw_total = backward.run_totals[:runs] + self.overhead_ns() * backward.intervals.shape[1]
        graph_start = backward.run_starts[:runs]
        rows[:, self.n_nodes + 2] += np.maximum(graph_start - marks[:, _BACKWARD_BEGIN], 0)
        rows[:, self.n_nodes + 1] += np.maximum(
            marks[:, _BACKWARD_END] - graph_start - raw_total, 0)
        return np.rint(rows).astype(np.int64)


def _per_row(samples: np.ndarray, rows: np.ndarray, width: int) -> np.ndarray:
    """(runs, width) float sums of `samples`' columns by their `rows`."""
    summed = np.zeros((samples.shape[0], width), np.float64)
    for column, row in enumerate(rows.tolist()):
        summed[:, row] += samples[:, column]
    return summed


def _step_marks(records: Records, first: int) -> np.ndarray:
    """(steps, 5) timestamps of the complete steps in `records` (a step that raised lacks a
    mark and is left out)."""
    order = np.argsort(records.timestamp_ns, kind="stable")
    ids = records.id[order].astype(np.int64) - first
    stamps = records.timestamp_ns[order].astype(np.int64)
    steps = []
    for begin in np.flatnonzero(ids == _FORWARD).tolist():
        window = ids[begin:begin + 5]
        if len(window) == 5 and window.tolist() == list(range(5)):
            steps.append(stamps[begin:begin + 5])
    return np.array(steps, dtype=np.int64).reshape(-1, 5)
