"""When the user's model raises during a timed run: which node it was in (for hooks, read from
the marks the run left, with the recorder left clean of them) as one line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import _C
from ..errors import PyfxprofError, first_line
from .recorder import RECORDER


@dataclass(frozen=True)
class MarkLayout:
    """How an executor's marks name its nodes: ids first_id .. first_id+count-1, with
    `per_node` marks per node (codegen: 1, the boundary before node k is mark k; interpreter
    and hooks: 2, begin 2k and end 2k+1) and, for hooks, the label of each position."""

    first_id: int
    count: int
    per_node: int
    labels: Sequence[str] | None = None


def failed_label(layout: MarkLayout, names: Sequence[str]) -> str | None:
    """The label (layout's own, else from `names`) of the node the last run raised in, or
    None after the last one; drains the layout's records (see failed_position)."""
    position = failed_position(layout)
    labels = list(layout.labels) if layout.labels is not None else list(names)
    return labels[position] if position < len(labels) else None


def failed_position(layout: MarkLayout) -> int:
    """Drain the layout's id range (so nothing of the failed run stays pending) and return
    the position of the node the calling thread's last run was in when it raised.

    A codegen run whose last mark is k was inside node k; an interpreter or hooks run whose
    last mark is a begin 2k was inside node k, an end 2k+1 between node k and the next.
    """
    records = RECORDER.collect(layout.first_id, layout.count)
    mine = records.select(records.thread == _C.thread_number())
    begins = np.flatnonzero(mine.kind == _C.KIND_RUN_BEGIN)
    start = int(begins[-1]) + 1 if begins.size else 0
    marks = mine.id[start:][mine.kind[start:] == _C.KIND_MARK]
    if not marks.size:
        return 0
    offset = int(marks[-1]) - layout.first_id
    return offset if layout.per_node == 1 else (offset + 1) // 2


def run_failure(node: str | None, run: str, error: Exception) -> PyfxprofError:
    """The one-line error for `error` raised by the model in `run` inside `node` (the
    executor's failed_node(); None: after its last timed node).

    Example:
        >>> str(run_failure("conv", "timed run 3 of 5", ValueError("bad")))
        "the model raised in timed run 3 of 5, in node 'conv': ValueError: bad"
    """
    where = f"in node {node!r}" if node is not None else "after its last timed node"
    return PyfxprofError(f"the model raised in {run}, {where}: {type(error).__name__}: "
                         f"{first_line(error)}")
