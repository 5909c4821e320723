"""Training loops under `Profiler(backward=True)`: each recorded call's backward timed per
forward node (the pre-hooks of timing/backward.py, armed on the call's outputs) and the
optimizer's step (torch.optim's global step hooks) as rows of the call's Profile."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                   register_optimizer_step_pre_hook)

from ..timing.native import _C
from ..capture.model_state import InPlaceGuard
from ..data.rungs import DYNAMO, GRAPH_RUNGS
from ..data.profile import Profile
from ..data.validate import run_coverage
from ..timing.backward import (ACCUMULATE_ROW, ENGINE_ROW, WrappingExecutor, autograd_nodes,
                               calibrate_backward_hook, mark_hook, output_roots,
                               row_of_positions)
from ..timing.durations import RunTimings
from ..timing.recorder import RECORDER, Records

#: Rows a loop Profile gets after the forward nodes with backward=True: the optimizer step
#: takes the place the loss has in timing.backward.EXTRA_ROWS (the user's loss is not timed).
OPTIMIZER_ROW = "(optimizer step)"
#: From ``p.step()`` to the step's first call of the model: the data loader and whatever else
#: the loop does before it (and the Profiler's own per-call work, a few µs).
DATA_ROW = "(data loading)"
LOOP_ROWS = (OPTIMIZER_ROW, ACCUMULATE_ROW, ENGINE_ROW, DATA_ROW)
_END, _STEP_BEGIN, _STEP_END = range(3)


class LoopBackwardExecutor(WrappingExecutor):
    """Wraps a call group's graph executor: when a call runs with grad enabled, a pre-hook
    on each autograd node its outputs lead to marks the node's start, and the end of that
    backward is marked by an engine callback (which also removes the hooks). The first such
    call first claims the autograd nodes per forward node on a side run (random state and
    buffers restored, so the user's training is unchanged).

    Example:
        >>> import torch.fx as fx
        >>> from pyfxprof.timing.executors import CodegenExecutor
        >>> gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2)))
        >>> executor = LoopBackwardExecutor(CodegenExecutor(gm, 1), gm)
        >>> executor.run((torch.ones(1, 2),)).sum().backward()
        >>> executor.timings().intervals.shape, executor.backward_samples().shape
        ((1, 5), (1, 5))
    """

    def __init__(self, inner, gm) -> None:
        self.inner, self.gm, self.n_nodes = inner, gm, inner.calls_per_run
        self.rows: np.ndarray | None = None
        self.hook_calibration = calibrate_backward_hook()
        self.first = RECORDER.allocate(3)
        self.node_first = 0
        self.hooks: list = []
        self._backward: np.ndarray | None = None
        self._optimizer: list = []

    def open(self) -> None:
        """Mark every optimizer step (torch.optim's global hooks) until close()."""
        if not self._optimizer:
            begin, end = self.first + _STEP_BEGIN, self.first + _STEP_END
            self._optimizer = [
                register_optimizer_step_pre_hook(
                    lambda *_: _C.mark(begin)),
                register_optimizer_step_post_hook(
                    lambda *_: _C.mark(end))]

    def close(self) -> None:
        """Remove the optimizer hooks (the Profiler block ends)."""
        for handle in self._optimizer:
            handle.remove()
        self._optimizer = []

    def claim(self, args: tuple) -> None:
        """Claim the autograd nodes per forward node once, on the first call with grad
        enabled (or ahead of it: on a capture call's copied graph inputs)."""
        if self.rows is None and torch.is_grad_enabled():
            self._claim(args)

    def run(self, args: tuple) -> Any:
        self.claim(args)
        output = self.inner.run(args)
        if self.rows is not None and torch.is_grad_enabled():
            self._arm(output_roots(output), self.rows)
        return output

    def _claim(self, args: tuple) -> None:
        """The side run claiming autograd nodes per forward node, on copies of the arguments
        autograd does not track (a Dynamo graph's buffers: BatchNorm's running statistics),
        so no tensor an earlier call's pending backward saved is written."""
        guard = InPlaceGuard(self.gm)
        with torch.no_grad():
            copies = tuple(value.detach().clone() if isinstance(value, torch.Tensor)
                           and not value.requires_grad else value for value in args)
        with torch.random.fork_rng():
            rows = row_of_positions(self.gm, copies, None, self.n_nodes)
        guard.restore()
        self.node_first = RECORDER.allocate(len(rows))
        self.hooks = [mark_hook(self.node_first + i) for i in range(len(rows))]
        self.rows = rows

    def _arm(self, roots: list, rows: np.ndarray) -> None:
        nodes = autograd_nodes(*roots)
        if len(nodes) != len(rows):
            return  # another graph than the claimed one: this call's backward is not timed
        handles = [node.register_prehook(hook) for node, hook in zip(nodes, self.hooks)]
        ended = functools.partial(_ended, handles, self.first + _END)
        once = [False]

        def queue_end(_grads):
            if not once[0]:
                once[0] = True
                torch.autograd.Variable._execution_engine.queue_callback(ended)
        handles += [root.register_prehook(queue_end) for root in roots]

    def reset(self, runs: int = 0) -> None:
        self.inner.reset(runs)
        self._collect()

    def _collect(self) -> tuple[Records, Records | None]:
        mine = RECORDER.collect(self.first, 3)
        nodes = (RECORDER.collect(self.node_first, len(self.rows)) if self.rows is not None
                 else None)  # rows and node_first (ids start at 1) are set by _claim
        return mine, nodes

    def timings(self) -> RunTimings:
        """Forward columns, then zero forward time for the backward rows and the optimizer
        step after each call; run totals add the backward and the optimizer step.
        backward_samples() holds the backward (None when not one per call)."""
        forward = self.inner.timings()
        runs = forward.intervals.shape[0]
        backward, totals, optimizer = self._per_call(*self._collect(), runs)
        extra = np.zeros((runs, len(LOOP_ROWS)), np.int64)
        extra[:, 0] = optimizer
        self._backward = backward
        return RunTimings(np.hstack([forward.intervals, extra]),
                          forward.run_totals + totals + optimizer, forward.run_starts,
                          forward.incomplete_runs)

    def _per_call(self, mine: Records, nodes: Records | None, runs: int
                  ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """(backward (runs, n + 3) or None, backward totals, optimizer ns) per call."""
        zeros = np.zeros(runs, np.int64)
        ends = np.sort(mine.timestamp_ns[mine.id == self.first + _END])
        optimizer = _optimizer_after(mine, self.first, ends if len(ends) == runs else None, runs)
        rows = self.rows  # (not None when nodes is not: _collect)
        if nodes is None or rows is None or len(ends) != runs:
            return None, zeros, optimizer
        order = np.argsort(nodes.timestamp_ns, kind="stable")
        stamps, positions = nodes.timestamp_ns[order], nodes.id[order] - self.node_first
        split = np.searchsorted(stamps, ends)
        starts = np.append(0, split[:-1])
        if (split == starts).any():  # a call whose backward ran no node: one backward served
            return None, zeros, optimizer  # several calls (their losses summed), not one each
        backward = np.zeros((runs, self.n_nodes + len(LOOP_ROWS)), np.int64)
        totals = zeros.copy()
        cost = self.hook_calibration.overhead_ns
        for run, (a, b) in enumerate(zip(starts, split)):
            if b > a:
                spans = np.maximum(np.diff(np.append(stamps[a:b], ends[run])) - cost, 0)
                np.add.at(backward[run], rows[positions[a:b]], np.rint(spans).astype(np.int64))
                totals[run] = max(ends[run] - stamps[a] - cost * (b - a), 0)
        return backward, totals, optimizer

    def backward_samples(self) -> np.ndarray | None:
        """Backward ns (calls, nodes + 4) of the calls timings() handed over, or None."""
        return self._backward


def _ended(handles: list, end_id: int) -> None:
    """The engine's callback at the end of a backward: mark it, remove the call's hooks."""
    _C.mark(end_id)
    for handle in handles:
        handle.remove()


def _optimizer_after(records, first: int, ends: np.ndarray | None, runs: int) -> np.ndarray:
    """Per call, the optimizer steps that began after its backward ended (or after the call,
    when backwards were not one per call) and before the next call's backward ended."""
    begins = np.sort(records.timestamp_ns[records.id == first + _STEP_BEGIN])
    finish = np.sort(records.timestamp_ns[records.id == first + _STEP_END])
    steps = np.zeros(runs, np.int64)
    if ends is None or len(begins) != len(finish):
        return steps
    which = np.searchsorted(ends, begins, side="right") - 1
    keep = which >= 0
    np.add.at(steps, which[keep], (finish - begins)[keep])
    return steps


def loop_frame(frame: pd.DataFrame, model: torch.nn.Module) -> pd.DataFrame:
    """A call group's nodes table plus the rows of LOOP_ROWS."""
    from ..run.training import extra_rows
    return extra_rows(frame, model, LOOP_ROWS, ["optimizer", "backward", "backward", "data"],
                      ["optimizer.step", "AccumulateGrad", "autograd engine", "before the call"])


def with_loop_backward(profile: Profile, executor: LoopBackwardExecutor, steps: list,
                       step_starts: list) -> Profile:
    """`profile` (built on loop_frame) with the data-loading row filled in and the
    executor's backward samples when there is one backward per call (else a note in its
    metadata instead)."""
    data = data_loading_ns(profile.run_starts, steps, step_starts)
    samples = profile.samples.copy()
    samples[:, -1] = data
    totals = profile.run_totals + data
    backward = executor.backward_samples()
    meta = dict(profile.meta)
    if backward is None:
        meta["backward_note"] = ("not one backward per recorded call in this window: no "
                                 "backward columns")
    else:
        backward = backward[:profile.n_runs]
        meta.update(coverage=run_coverage(samples + backward, totals),
                    backward_mechanism="pre-hooks: the Profiler loop times the user's own "
                                       "eager backward",
                    backward_overhead_ns=executor.hook_calibration.overhead_ns)
    return Profile(profile.nodes, samples, totals, meta, profile.device_samples,
                   profile.run_starts, profile.run_noise, backward_samples=backward)


def data_loading_ns(run_starts, steps: list, step_starts: list) -> np.ndarray:
    """Per call, the time from its step's start (``p.step()``) to the call, for the first
    call of each step; 0 for later calls and in the block's step 0 (which also holds the
    capture of the model).

    Example:
        >>> data_loading_ns(np.array([150, 180, 260]), [1, 2], [100, 200]).tolist()
        [50, 0, 60]
    """
    if run_starts is None or not len(step_starts):
        return np.zeros(0 if run_starts is None else len(run_starts), np.int64)
    starts = np.asarray(step_starts, np.int64)
    step = np.searchsorted(starts, run_starts, side="right") - 1
    first = np.ones(len(run_starts), bool)
    first[1:] = step[1:] != step[:-1]
    counted = first & (step >= 0) & (np.asarray(steps)[np.maximum(step, 0)] > 0)
    return np.where(counted, run_starts - starts[np.maximum(step, 0)], 0).astype(np.int64)


def wrap_for_backward(group, block_open: bool) -> None:
    """Give a newly captured call group (a graph capture) a LoopBackwardExecutor; groups
    timed by module hooks keep theirs, and their ``backward_note`` says why their backward
    is not timed."""
    if group.hooks:
        group.backward_note = no_graph_note(group.capture.notes)
        return
    if group.capture.graph_module is None:  # several Dynamo graphs (graph breaks)
        group.backward_note = several_graphs_note(group.capture.frame)
        return
    group.executor = LoopBackwardExecutor(group.executor, group.capture.graph_module)
    if group.capture.frame is not None:  # Dynamo's code calls the executor's run
        group.capture.frame.run_graph_with(group.executor.run)
    if block_open:
        group.executor.open()


def no_graph_note(capture_notes: list) -> str:
    """Why a call group has no backward columns: it was timed by module hooks, with the
    graph rungs' reasons from its capture notes.

    Example:
        >>> no_graph_note(["dynamo: the model is in training mode"])
        'no backward columns: the backward is timed per node on a graph capture (fx or Dynamo) and these calls were timed by module hooks (dynamo: the model is in training mode)'
    """
    rungs = sorted((note for note in capture_notes
                    if note.split(":")[0] in GRAPH_RUNGS),
                   key=lambda note: not note.startswith(DYNAMO))
    why = "; ".join(rungs)
    why = f" ({why[:300]}…)" if len(why) > 300 else f" ({why})" if why else ""
    return ("no backward columns: the backward is timed per node on a graph capture (fx or "
            f"Dynamo) and these calls were timed by module hooks{why}")


def several_graphs_note(frame) -> str:
    """Why a call group that ran as several Dynamo graphs has no backward columns.

    Example:
        >>> from types import SimpleNamespace
        >>> several_graphs_note(SimpleNamespace(graphs=[1, 2], breaks=["Data-dependent branching"]))
        'no backward columns: the backward is timed per node on one graph, and these calls ran as 2 Dynamo graphs (graph breaks: Data-dependent branching)'
    """
    graphs = len(getattr(frame, "graphs", None) or ())
    breaks = "; ".join(getattr(frame, "breaks", None) or ())[:300]
    return ("no backward columns: the backward is timed per node on one graph, and these calls "
            f"ran as {graphs or 'several'} Dynamo graphs"
            + (f" (graph breaks: {breaks})" if breaks else ""))


def optimizer_hooks(groups, on: bool) -> None:
    """Add (when a Profiler block opens) or remove (when it closes) the optimizer step hooks
    of the groups timing their backward."""
    for group in groups:
        if isinstance(group.executor, LoopBackwardExecutor):
            group.executor.open() if on else group.executor.close()
