"""Backward time per forward node: which FX node created each autograd node, one native mark in
a pre-hook of every autograd node of a run, and the marks turned into per-row durations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import numpy as np
import torch
import torch.fx as fx

from .native import _C
from ..capture.outputs import flatten
from ..capture.tracing import timed_nodes
from .calibration import Calibration, summarise
from .recorder import RECORDER, Records

#: Extra rows after the forward nodes: the loss, gradient accumulation into the leaves (the
#: AccumulateGrad nodes) and the engine's work before the first autograd node runs.
LOSS_ROW, ACCUMULATE_ROW, ENGINE_ROW = "(loss)", "(accumulate grad)", "(autograd engine)"
EXTRA_ROWS = (LOSS_ROW, ACCUMULATE_ROW, ENGINE_ROW)
#: Marks of a run besides the autograd nodes' pre-hooks, in the order they are taken.
_LOSS_BEGIN, _LOSS_END, _BACKWARD_BEGIN, _BACKWARD_END = range(4)


_Wrapping = TypeVar("_Wrapping", bound="WrappingExecutor")


class WrappingExecutor:
    """An executor around another one, ``inner``, that times the backward: its attributes
    (mode, calibration, device, ...) and its ``with`` are the inner's, a subclass adding
    what it needs."""

    inner: Any

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["inner"], name)

    def __enter__(self: _Wrapping) -> _Wrapping:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.inner.__exit__(*exc_info)


def autograd_nodes(*roots: Any) -> list:
    """The autograd nodes reachable from `roots` (grad_fns), depth first in the order of
    ``next_functions``: the same order for the same graph in every run.

    Example:
        >>> x = torch.ones(2, requires_grad=True)
        >>> [type(n).__name__ for n in autograd_nodes(((x * 2).sum()).grad_fn)]
        ['SumBackward0', 'MulBackward0', 'AccumulateGrad']
    """
    order, seen, stack = [], set(), list(reversed(roots))
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend(child for child, _ in reversed(node.next_functions))
    return order


def output_roots(value: Any) -> list:
    """The grad_fns of the tensors in `value` (any nesting, dataclasses included), first
    appearance order."""
    roots = []
    for tensor in flatten(value)[0]:
        if isinstance(tensor, torch.Tensor) and tensor.grad_fn is not None \
                and tensor.grad_fn not in roots:
            roots.append(tensor.grad_fn)
    return roots


def _claim(value: Any, row: int, owner: dict) -> None:
    """Give every autograd node reachable from `value`'s tensors and not yet owned to `row`
    (AccumulateGrad nodes stay unowned: they are the accumulate row)."""
    stack = [t.grad_fn for t in flatten(value)[0] if isinstance(t, torch.Tensor)]
    while stack:
        node = stack.pop()
        if node is None or node in owner or type(node).__name__ == "AccumulateGrad":
            continue
        owner[node] = row
        stack.extend(child for child, _ in node.next_functions)


class _ClaimingInterpreter(fx.Interpreter):
    """Runs a graph and, after each timed node, claims the autograd nodes it created."""

    def __init__(self, gm: fx.GraphModule, owner: dict) -> None:
        super().__init__(gm)
        self.rows = {node: k for k, node in enumerate(timed_nodes(gm.graph))}
        self.owner = owner

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        if n in self.rows:
            _claim(result, self.rows[n], self.owner)
        return result


def row_of_positions(gm: fx.GraphModule, args: tuple, loss_fn: Callable | None,
                     n_nodes: int) -> np.ndarray:
    """For each autograd node of one step (in autograd_nodes order from the loss, or from
    the graph's outputs when `loss_fn` is None), its row: the timed forward node that created
    it (0..n_nodes-1), or n_nodes + 0/1/2 for the loss, accumulate and engine rows (nodes
    nobody claimed go to the engine row). One untimed forward through fx.Interpreter; no
    backward is run.

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
        >>> row_of_positions(gm, (torch.ones(1, 2),), lambda y: y.sum(), 2).tolist()
        [2, 1, 0, 3, 0, 3]
    """
    owner: dict = {}
    output = _ClaimingInterpreter(gm, owner).run(*args)
    if loss_fn is None:
        nodes = autograd_nodes(*output_roots(output))
    else:
        loss = loss_fn(output)
        _claim(loss, n_nodes, owner)
        nodes = autograd_nodes(loss.grad_fn)
    accumulate, engine = n_nodes + 1, n_nodes + 2
    return np.array([owner.get(node, accumulate if type(node).__name__ == "AccumulateGrad"
                               else engine) for node in nodes], dtype=np.int64)


#: Autograd node classes of torch.library custom ops: AOTAutograd keeps those ops in its graphs.
_CUSTOM_OP_BACKWARD = "GeneratedBackwardFor_"


def aot_refusal(gm: fx.GraphModule, args: tuple, loss_fn: Callable,
                device_events: bool) -> str | None:
    """Why a step's backward is timed by autograd pre-hooks (mark_hook) rather than through
    AOTAutograd (timing/aot_backward.py), or None when AOTAutograd can be used. AOTAutograd
    runs a Python ``torch.autograd.Function``'s code once, while tracing, and keeps only the
    aten ops it called: any other work in it (native calls, Python) would not be in the step.
    Found by one plain forward and the loss, their autograd graph walked (nothing is run
    backward).

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.Linear(2, 2))
        >>> aot_refusal(gm, (torch.ones(1, 2),), lambda y: y.sum(), False) is None
        True
    """
    if device_events:
        return "pre-hooks: device (CUDA event) timing times the captured graph itself"
    for node in autograd_nodes(loss_fn(gm(*args)).grad_fn):
        name = type(node).__name__
        if isinstance(node, torch.autograd.function.BackwardCFunction) \
                and not name.startswith(_CUSTOM_OP_BACKWARD):
            return (f"pre-hooks: {name} is a Python torch.autograd.Function, whose code "
                    "AOTAutograd would run once while tracing rather than in every step")
    return None


def mark_hook(mark_id: int) -> Callable:
    """An autograd pre-hook that records one native mark tagged `mark_id`.

    Example:
        >>> x = torch.ones(1, requires_grad=True); y = x * 2
        >>> _ = y.grad_fn.register_prehook(mark_hook(RECORDER.allocate(1)))
        >>> y.backward()
    """
    def pre_hook(_grads, _mark=_C.mark, _id=mark_id):
        _mark(_id)
    return pre_hook


class BackwardMarks:
    """Marks a step's loss and backward, and each autograd node's start (a pre-hook), in
    one id range; `durations` turns the records into (loss, backward per row) per run.

    Example:
        >>> marks = BackwardMarks(np.array([1, 0, 3]), 1, Calibration(0, 0, 1, "t"))
        >>> x = torch.ones(2, requires_grad=True)
        >>> loss = marks.step(lambda: (x * 2), lambda y: y.sum())
        >>> loss_ns, backward, totals = marks.durations(marks.collect())
        >>> backward.shape, int(backward[0].sum()) <= int(totals[0])
        ((1, 4), True)
    """

    def __init__(self, rows: np.ndarray, n_nodes: int, calibration: Calibration) -> None:
        self.rows, self.n_nodes, self.calibration = rows, n_nodes, calibration
        self.first = RECORDER.allocate(len(rows) + 4)
        self.hooks = [mark_hook(self.first + 4 + i) for i in range(len(rows))]

    def step(self, forward: Callable, loss_fn: Callable) -> Any:
        """Run forward, the loss and its backward, marked; returns forward's output. The
        leaves' ``.grad`` is left as backward set it (the caller clears it)."""
        output = forward()
        mark, first = _C.mark, self.first
        mark(first + _LOSS_BEGIN)
        loss = loss_fn(output)
        mark(first + _LOSS_END)
        nodes = autograd_nodes(loss.grad_fn)
        if len(nodes) != len(self.rows):
            raise RuntimeError(f"the autograd graph has {len(nodes)} nodes, the analysis run "
                               f"had {len(self.rows)}: the model's backward changes between runs")
        handles = [node.register_prehook(hook) for node, hook in zip(nodes, self.hooks)]
        del nodes
        mark(first + _BACKWARD_BEGIN)
        loss.backward()
        mark(first + _BACKWARD_END)
        for handle in handles:  # AccumulateGrad nodes may outlive the graph
            handle.remove()
        return output

    def collect(self) -> Records:
        """This range's records so far."""
        return RECORDER.collect(self.first, len(self.rows) + 4)

    def durations(self, records: Records) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(loss ns (runs,), backward ns (runs, n_nodes + 3), backward totals (runs,)) of
        the complete runs in `records`, the hook's calibrated cost taken off each autograd
        node and, once per node, off the backward total. Also kept: each run's first
        autograd node's mark (``first_node_ns``) and the rows in the order the first run
        ran them, the engine row first (``order``)."""
        order = np.argsort(records.timestamp_ns, kind="stable")
        ids = records.id[order].astype(np.int64) - self.first
        stamps = records.timestamp_ns[order]
        starts = np.flatnonzero(ids == _LOSS_BEGIN)
        ends = np.append(starts[1:], len(ids))
        runs = [self._one_run(ids[a:b], stamps[a:b]) for a, b in zip(starts, ends)]
        runs = [r for r in runs if r is not None]
        width = self.n_nodes + 3
        if not runs:
            return np.zeros(0, np.int64), np.zeros((0, width), np.int64), np.zeros(0, np.int64)
        loss, backward, totals, self.first_node_ns, sequences = zip(*runs)
        engine = self.n_nodes + 2
        self.order = [engine, *dict.fromkeys(r for r in sequences[0] if r != engine)]
        return np.array(loss), np.stack(backward), np.array(totals)

    def _one_run(self, ids: np.ndarray, stamps: np.ndarray):
        """(loss ns, backward ns per row, backward total, the first autograd node's mark, the
        rows of the nodes in the order they ran) of one run's marks, or None when a mark is
        missing (the run raised)."""
        at = {name: np.flatnonzero(ids == name) for name in range(4)}
        if any(len(found) != 1 for found in at.values()):
            return None
        position = ids >= 4
        nodes, node_stamps = ids[position] - 4, stamps[position]
        if len(nodes) == 0:
            return None
        begin, end = stamps[at[_BACKWARD_BEGIN][0]], stamps[at[_BACKWARD_END][0]]
        cost = self.calibration.overhead_ns
        spans = np.diff(np.append(node_stamps, end)) - cost
        per_row = np.zeros(self.n_nodes + 3, np.float64)
        np.add.at(per_row, self.rows[nodes], np.maximum(spans, 0))
        per_row[self.n_nodes + 2] += max(node_stamps[0] - begin - cost, 0)
        total = max(end - begin - cost * len(nodes), 0)
        loss = stamps[at[_LOSS_END][0]] - stamps[at[_LOSS_BEGIN][0]]
        return (int(loss), np.rint(per_row).astype(np.int64), int(total), int(node_stamps[0]),
                self.rows[nodes].tolist())


@dataclass
class _Chain:
    """A chain of cheap autograd nodes, for calibrating the pre-hook's cost."""

    length: int = 64

    def backward_ns(self, hooked: bool) -> int:
        leaf = torch.ones(1, requires_grad=True)
        value = leaf
        for _ in range(self.length):
            value = value * 1.0
        loss = value.sum()
        handles = ([n.register_prehook(mark_hook(0)) for n in autograd_nodes(loss.grad_fn)]
                   if hooked else [])
        begin = _C.now_ns()
        loss.backward()
        elapsed = _C.now_ns() - begin
        for handle in handles:
            handle.remove()
        return elapsed


_CALIBRATION: list[Calibration] = []


def calibrate_backward_hook(repeats: int = 15) -> Calibration:
    """What one autograd pre-hook with a native mark adds to a backward, in ns: a chain of
    cheap nodes' backward with and without hooks, interleaved; measured once per process.

    Example:
        >>> calibrate_backward_hook().overhead_ns > 0
        True
    """
    if not _CALIBRATION:
        chain = _Chain()
        per_node = []
        for _ in range(repeats):
            plain, hooked = chain.backward_ns(False), chain.backward_ns(True)
            per_node.append(max(hooked - plain, 0) / (chain.length + 2))
        _CALIBRATION.append(summarise(np.array(per_node), "autograd pre-hook, chain of 64"))
    return _CALIBRATION[0]
