"""When the user's model raises during a timed run: which node it was in (for hooks, read from
the marks the run left, with the recorder left clean of them), as one line (profile()) or as
a note on the model's own exception (the Profiler loop)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .native import _C
from ..errors import PyfxprofError, first_line
from .recorder import Records


@dataclass(frozen=True)
class MarkLayout:
    """How an executor's marks name its nodes: ids first_id .. first_id+count-1, with
    `per_node` marks per node (codegen: 1, the boundary before node k is mark k; interpreter
    and hooks: 2, begin 2k and end 2k+1) and, for hooks, the label of each position."""

    first_id: int
    count: int
    per_node: int
    labels: Sequence[str] | None = None


def failed_label(layout: MarkLayout, names: Sequence[str], records: Records) -> str | None:
    """The label (layout's own, else from `names`) of the node the calling thread's last run
    raised in, or None when it raised outside every node, from the layout's `records` (see
    failed_position)."""
    position = failed_position(layout, records)
    labels = list(layout.labels) if layout.labels is not None else list(names)
    return labels[position] if position is not None and position < len(labels) else None


def failed_position(layout: MarkLayout, records: Records) -> int | None:
    """The position of the node the calling thread's last run was in when it raised (None:
    outside every node), from the records of the layout's id range (drained by the caller,
    so nothing stays pending).

    A run with one mark per node whose last mark is k was inside node k; with begin and end
    marks (hooks), a last begin 2k means inside node k, while a last end 2k+1 or no mark at
    all means the model's own code between nodes, before the first or after the last.
    """
    mine = records.select(records.thread == _C.thread_number())
    begins = np.flatnonzero(mine.kind == _C.KIND_RUN_BEGIN)
    start = int(begins[-1]) + 1 if begins.size else 0
    marks = mine.id[start:][mine.kind[start:] == _C.KIND_MARK]
    if not marks.size:
        return 0 if layout.per_node == 1 else None
    offset = int(marks[-1]) - layout.first_id
    if layout.per_node == 1:
        return offset
    return offset // 2 if offset % 2 == 0 else None


def failure_place(node: str | None, run: str, kind: str | None = None) -> str:
    """Where the model raised: `run`, and `node` (the executor's failed_node(); None: in its
    own code outside every timed node) with its `kind` (op and target) when known.

    Example:
        >>> failure_place("conv", "call 3 of Net (step 1)", "call_module conv")
        "the model raised in call 3 of Net (step 1), in node 'conv' (call_module conv)"
    """
    where = f"in node {node!r}" if node is not None else "outside its timed nodes"
    if node is not None and kind:
        where += f" ({kind})"
    return f"the model raised in {run}, {where}"


def run_failure(node: str | None, run: str, error: Exception,
                kind: str | None = None) -> PyfxprofError:
    """The one-line error for `error` raised by the model in `run` inside `node`.

    Example:
        >>> str(run_failure("conv", "timed run 3 of 5", ValueError("bad")))
        "the model raised in timed run 3 of 5, in node 'conv': ValueError: bad"
    """
    return PyfxprofError(f"{failure_place(node, run, kind)}: {type(error).__name__}: "
                         f"{first_line(error)}")


def note_failure(error: BaseException, node: str | None, run: str,
                 kind: str | None = None) -> None:
    """Add to the model's own `error` a PEP 678 note (shown under its traceback) saying
    where it raised, when the profiler re-raises it unchanged (Python >= 3.11; older
    Pythons have no notes and get none).

    Example:
        >>> error = ValueError("bad"); note_failure(error, "conv", "call 2 of Net (step 0)")
        >>> getattr(error, "__notes__", [""])[-1].startswith("pyfxprof: the model raised")
        True
    """
    if hasattr(error, "add_note"):
        error.add_note(f"pyfxprof: {failure_place(node, run, kind)}; the profiler was left "
                       "clean")


def node_kind(frame, node: str | None) -> str | None:
    """The op and target of the node named `node` in a nodes table (a DataFrame with name,
    op and target columns), None when it has no such row.

    Example:
        >>> import pandas as pd
        >>> node_kind(pd.DataFrame({"name": ["a"], "op": ["call_module"], "target": ["a"]}), "a")
        'call_module a'
    """
    rows = frame.loc[frame["name"] == node, ["op", "target"]]
    return None if rows.empty else " ".join(map(str, rows.iloc[0]))
