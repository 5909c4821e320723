"""What Profile.replay found, as plain data: a node's isolated warm and cold medians beside its
in-graph median, each variant's change against the as-is replay with its numeric error, and a
row per shape where the node saw several. Its table and notebook repr are served by
views/replay_text.py (docs/replay.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import served_methods

#: The node ops a replay rebuilds (graph nodes calling something; run/replay_build.py).
REPLAYED_OPS = ("call_module", "call_function", "call_method")


@dataclass(frozen=True)
class VariantRow:
    """One variant against the as-is replay: its median (ns), the relative change with its
    interval (fractions, variant / as-is - 1), q-value and verdict ("+" slower, "-" faster,
    "=" same within the margin, "?" unresolved), and the max absolute and relative (to the
    output's largest magnitude) difference of its outputs, ``beyond_tolerance`` when that
    exceeds the tolerance of the variant's dtype; ``error``: why it could not run, else ""."""

    name: str
    median_ns: float = math.nan
    change: float = math.nan
    low: float = math.nan
    high: float = math.nan
    q_value: float = math.nan
    verdict: str = "?"
    max_abs_error: float = math.nan
    max_rel_error: float = math.nan
    beyond_tolerance: bool = False
    error: str = ""


@dataclass(frozen=True)
class ShapeRow:
    """One recorded shape of a node replayed: the shapes, the nodes that called it so, and
    its isolated warm and cold medians (ns, NaN when not timed) beside its in-graph median
    (the mean of those nodes' medians). For a shape of a Profiler loop's calls (a decode
    step's cache length), ``calls`` counts the calls made at it and the in-graph median is
    theirs; ``own_in_graph`` False: the calls could not be matched to shapes, and the
    in-graph median is the node's over all its calls."""

    input_shapes: str
    nodes: tuple[str, ...]
    warm_ns: float = math.nan
    cold_ns: float = math.nan
    in_graph_ns: float = math.nan
    calls: int = 0
    own_in_graph: bool = True


@served_methods
@dataclass(frozen=True)
class ReplayResult:
    """A node replayed alone: ``warm_ns`` and ``cold_ns`` (medians of the isolated calls,
    NaN when not timed), ``in_graph_ns`` (the node's median in the profile), the shapes it
    ran on, and the variants' rows (on those shapes). ``shapes``: a row per recorded shape
    when the node saw more than one (a module path called at several nodes, or a Profiler
    loop's node over a growing cache), the first being the one above; ``recorded_shapes``:
    how many there were when the rows are an evenly spread few of them (else 0). ``fresh_inputs``: the node writes to its inputs, so each timed call ran on
    a fresh copy of them (made untimed).

    >>> r = ReplayResult("conv1", "call_module", "Conv2d", "([1, 3, 8, 8] float32)",
    ...                  warm_ns=1000.0, cold_ns=2000.0, in_graph_ns=1900.0)
    >>> r.matches, round(r.ratio("cold"), 2)
    ('cold', 0.95)
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS
        def table(self) -> str: ...
        def __str__(self) -> str: ...
        def _repr_html_(self) -> str: ...

    node: str
    op: str
    target: str
    input_shapes: str
    warm_ns: float = math.nan
    cold_ns: float = math.nan
    in_graph_ns: float = math.nan
    budget_s: float = 0.0
    variants: tuple[VariantRow, ...] = field(default_factory=tuple)
    shapes: tuple[ShapeRow, ...] = field(default_factory=tuple)
    fresh_inputs: bool = False
    recorded_shapes: int = 0  # shapes recorded, when more than the rows replayed

    def ratio(self, cache: str) -> float:
        """In-graph median over the isolated `cache` ("warm"/"cold") median."""
        alone = self.warm_ns if cache == "warm" else self.cold_ns
        return self.in_graph_ns / alone if alone > 0 else math.nan

    @property
    def matches(self) -> str:
        """Which isolated time the in-graph time is closest to (log distance): "warm" or
        "cold", "" unless both were timed (``cache="both"``)."""
        distances = {cache: abs(math.log(self.ratio(cache))) for cache in ("warm", "cold")
                     if self.ratio(cache) > 0}
        return min(distances, key=lambda cache: distances[cache]) if len(distances) == 2 else ""
