"""profile()'s nodes timed alone: the nodes of its top rows rebuilt on a copy of their module
and replayed warm (Profile.replay's machinery: run/replay_build.py, run/replay_timing.py)
after the timed runs, within a share of the profile's own time, as columns of the nodes table
that every report shows beside the row (docs/accuracy.md)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ArgumentError, first_line
from .replay_build import NOT_REPLAYED, on_a_copy, refusal, rebuilt_call
from .replay_inplace import mutates_inputs
from .replay_timing import measured_alone

#: The step's time: this share of profile()'s steps before it (capture to the user's call),
#: and at most this many seconds.
BUDGET_SHARE, BUDGET_CAP_S = 0.10, 1.0
#: Seconds of timed calls per node (bench()'s budget) of the top rows and of rows asked by
#: name, and at least this many of its calls in the graph: enough blocks for the median's
#: interval (a row asked gets more, for a narrower one).
NODE_BUDGET_S, ASKED_BUDGET_S, MIN_CALLS = 0.01, 0.05, 12
#: alone=True: at most this many rows: first the largest row of each kind of op of at least
#: KIND_SHARE of the run's median (a BatchNorm after a convolution reads several times its
#: cost alone: each kind shows it), then the largest others of at least MIN_SHARE.
MAX_ROWS, MIN_SHARE, KIND_SHARE = 8, 0.01, 0.001
#: How the nodes are replayed: on the same inputs each call (replay's cache="warm").
CACHE = "warm"
#: The nodes-table columns (ns; the note says how it was timed, or why not) and their blanks.
COLUMNS = {"alone_ns": math.nan, "alone_low_ns": math.nan, "alone_high_ns": math.nan,
           "alone_note": ""}


def alone_rows(value: Any) -> bool | tuple[str, ...]:
    """The `alone=` option checked: True (the top rows, within the budget), False (none) or
    node names and module paths (those rows, each timed whatever the budget).

    Example:
        >>> alone_rows(True), alone_rows(["bn1", "layer1.0.relu"])
        (True, ('bn1', 'layer1.0.relu'))
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if (isinstance(value, (list, tuple)) and value
            and all(isinstance(v, str) and v for v in value)):
        return tuple(value)
    raise ArgumentError(f"alone must be True (the top rows), False (none) or a list of node "
                        f"names or module paths, got {value!r:.60}")


def asked_rows(frame: pd.DataFrame, names: tuple[str, ...]) -> list[int]:
    """The frame positions of `names` (a node name, else the first node of a module path);
    a one-line error naming the first unknown one, before any run.

    Example:
        >>> frame = pd.DataFrame({"name": ["conv", "bn"], "module_path": ["c", "b"]})
        >>> asked_rows(frame, ("bn", "c"))
        [1, 0]
    """
    found = []
    for name in names:
        hits = np.flatnonzero(frame["name"].to_numpy() == name)
        if not len(hits):
            hits = np.flatnonzero(frame["module_path"].to_numpy() == name)
        if not len(hits):
            raise ArgumentError(f"alone: no node {name!r} in this model; give names from the "
                                f"table's Node column or module paths")
        found.append(int(hits[0]))
    return found


def top_rows(medians: np.ndarray, run_median: float, kinds: Any = None) -> list[int]:
    """alone=True's rows, at most MAX_ROWS in descending median: the largest row of each of
    `kinds` (one per row: the module type or function a node calls) of at least KIND_SHARE
    of the run, then the largest other rows of at least MIN_SHARE.

    Example:
        >>> top_rows(np.array([5.0, 300.0, 0.5, 40.0]), 400.0)
        [1, 3, 0]
        >>> top_rows(np.array([5.0, 300.0, 0.5, 40.0]), 400.0, ["relu", "conv", "bn", "conv"])
        [1, 3, 0, 2]
    """
    order = [int(i) for i in np.argsort(-medians, kind="stable")]
    chosen: dict[int, None] = {}
    if kinds is not None:
        seen: set = set()
        for i in order:
            if medians[i] >= KIND_SHARE * run_median and kinds[i] not in seen | {None}:
                seen.add(kinds[i])
                chosen[i] = None
    chosen.update((i, None) for i in order if medians[i] >= MIN_SHARE * run_median)
    return sorted(list(chosen)[:MAX_ROWS], key=lambda i: order.index(i))


@dataclass
class Alone:
    """What the step found: the columns (COLUMNS, one value per frame row) and
    meta["alone"] (how the rows were chosen, the budget and the time spent)."""

    columns: dict[str, list]
    meta: dict = field(default_factory=dict)


def timed_alone(frame: pd.DataFrame, intervals: np.ndarray, run_totals: np.ndarray,
                model: Any, rows: bool | tuple[str, ...], spent_before_s: float) -> Alone:
    """The nodes of `rows` (alone_rows) timed alone, warm, on copies of their modules (the
    model is never changed), under NODE_BUDGET_S each (ASKED_BUDGET_S for rows asked); with
    alone=True the top rows while the step stays within BUDGET_SHARE of `spent_before_s`
    (the profile's steps so far), at most BUDGET_CAP_S. A row that cannot be replayed, or
    that the budget left out, has its reason in ``alone_note``."""
    count = min(len(frame), intervals.shape[1])
    medians = np.median(intervals[:, :count], axis=0) if len(intervals) else np.zeros(count)
    auto = rows is True
    chosen = (top_rows(medians, float(np.median(run_totals)), _kinds(frame)[:count]) if auto
              else asked_rows(frame, rows if isinstance(rows, tuple) else ()))
    budget = min(BUDGET_CAP_S, BUDGET_SHARE * spent_before_s) if auto else math.inf
    columns: dict[str, list] = {name: [blank] * len(frame) for name, blank in COLUMNS.items()}
    started, timed = time.perf_counter(), 0
    for index in sorted(chosen, key=lambda i: medians[i]):  # the cheapest first: most kinds
        spent = time.perf_counter() - started
        node_budget = _node_budget(medians[index], NODE_BUDGET_S if auto else ASKED_BUDGET_S)
        row = frame.iloc[index]
        why = refusal(row)
        why = None if why is None else f"not replayable: {why}"
        # its timed calls and bench's untimed ones (two first calls, a block, FLOPs), or
        # what the nodes timed so far took each: a cheaper row may still fit
        each = max(1.5 * node_budget + 4 * medians[index] / 1e9, spent / max(timed, 1))
        if why is None and spent + each > budget:
            why = (f"not timed: the alone step's budget ({budget * 1e3:.0f} ms: "
                   f"{BUDGET_SHARE:.0%} of this profile's time, at most {BUDGET_CAP_S:g} s) "
                   "left too little for it")
        found = _one(row, model, float(medians[index]), node_budget) if why is None else why
        if isinstance(found, str):
            columns["alone_note"][index] = found
            continue
        timed += 1
        for name, value in zip(COLUMNS, (found.median_ns, found.low_ns, found.high_ns,
                                         found.how)):
            columns[name][index] = value
    meta = {"rows": "top" if auto else "given", "cache": CACHE, "timed": timed,
            "chosen": len(chosen), "budget_s": budget if auto else None,
            "spent_s": time.perf_counter() - started}
    return Alone(columns, meta)


def _kinds(frame: pd.DataFrame) -> list[str | None]:
    """Each row's kind of op: its module type (call_module), else its op and target; None
    for a row that is no op's call (the outside row, a range: never replayed)."""
    types = frame["module_type"] if "module_type" in frame else [""] * len(frame)
    return [None if op in NOT_REPLAYED else f"{op}:{module if op == 'call_module' else target}"
            for op, module, target in zip(frame["op"], types, frame["target"])]


def _node_budget(in_graph_ns: float, least: float = NODE_BUDGET_S) -> float:
    """Seconds of timed calls for a node of this median: `least`, or MIN_CALLS calls.

    Example:
        >>> _node_budget(1e3), _node_budget(1e7)
        (0.01, 0.12)
    """
    return max(least, MIN_CALLS * float(in_graph_ns) / 1e9)


def _one(row: Any, model: Any, in_graph_ns: float, budget: float) -> Any:
    """The node of `row` timed alone (an AloneTime), or why it could not be (a str)."""
    try:
        built, = on_a_copy([rebuilt_call(row, model, in_graph_ns)])
        built.mutates = mutates_inputs(built.target, *built.inputs())
        return measured_alone(built, CACHE, budget)
    except Exception as error:  # the user's module on rebuilt inputs: the row says why
        return f"not timed: {type(error).__name__}: {first_line(error)}"
