"""The capture modes, defined once: each rung of the capture ladder (and the two capture paths
beside it, an exported program's graph and a compiled model's kernels) as a Rung with the
properties the ladder, the Profiler loop, profile(), the CLI and the views of a saved profile's
``meta["capture_mode"]`` read, instead of comparing mode strings. Plain data (no torch), so
capture and the torch-free stages read the same table; tests/data/test_rungs.py checks that no
mode string is compared outside this file."""

from __future__ import annotations

from dataclasses import dataclass

FX, DYNAMO, FX_LEAF, HOOKS, WHOLE = "fx", "dynamo", "fx+leaf", "hooks", "whole"
#: An exported program's own graph (torch.export), timed as it is.
EXPORTED = "exported"
#: A compiled model (torch.compile / AOTInductor): one row per generated kernel.
INDUCTOR = "inductor"


@dataclass(frozen=True)
class Rung:
    """One capture mode (a Capture's `mode`, a profile's ``meta["capture_mode"]``).

    name: the mode's name. in_ladder: capture="auto" tries it, in RUNGS's order. forcible: a
    value of profile(capture=...). static: captures without inputs (capture(mode=...)).
    graph: a torch.fx graph is timed node by node (a backward can be timed on it). own_call:
    the model runs its own call with marking hooks (no graph). plain: capture="auto" landing
    here needs no fallback warning.

    >>> RUNG[HOOKS].own_call, RUNG[FX].graph
    (True, True)
    """

    name: str
    in_ladder: bool = True
    forcible: bool = True
    static: bool = True
    graph: bool = False
    own_call: bool = False
    plain: bool = False


#: Every capture mode; the ladder's rungs in the order capture="auto" tries them (docs/capture.md).
TABLE = (
    Rung(FX, graph=True, plain=True),
    Rung(DYNAMO, static=False, graph=True, plain=True),
    Rung(FX_LEAF, forcible=False, graph=True),  # the ladder's retry of a failed fx rung
    Rung(HOOKS, own_call=True),
    Rung(WHOLE, own_call=True),
    Rung(EXPORTED, in_ladder=False, forcible=False, static=False, graph=True, plain=True),
    Rung(INDUCTOR, in_ladder=False, forcible=False, static=False),
)
RUNG = {rung.name: rung for rung in TABLE}
#: The capture ladder's rungs, in the order capture="auto" tries them.
RUNGS = tuple(rung.name for rung in TABLE if rung.in_ladder)
#: Valid values of profile(capture=...): "auto" (the ladder) or one rung forced.
CAPTURE_MODES = ("auto",) + tuple(rung.name for rung in TABLE if rung.forcible)
#: Valid values of capture(mode=...): the ladder's rungs that need no inputs.
STATIC_MODES = tuple(rung.name for rung in TABLE if rung.in_ladder and rung.static)
#: The rungs that time a torch.fx graph node by node (a backward can be timed on them).
GRAPH_RUNGS = tuple(rung.name for rung in TABLE if rung.in_ladder and rung.graph)
