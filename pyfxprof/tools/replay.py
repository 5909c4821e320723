"""Profile.replay: a profiled node rebuilt and timed alone (warm, cold or both) beside its
in-graph median, and the variants tried on it against the as-is call (docs/replay.md)."""

from __future__ import annotations

import contextlib
import math
from typing import Any, Sequence

import torch

from ..capture.model_state import evaluation_mode
from ..data.profile import Profile
from ..data.replay_result import ReplayResult, ShapeRow, VariantRow
from ..errors import ArgumentError
from ..run.replay_build import Rebuilt, node_row, on_a_copy, rebuild_shapes, spec_text
from .replay_compare import MAX_CALLS, compare_variants
from ..run.replay_inplace import bound, mutates_inputs, on_fresh_copies, pool_calls
from ..run.replay_timing import cache_bytes, time_alone
from .replay_variants import variant_call

#: The choices of replay's cache=.
CACHES = ("warm", "cold", "both")
#: The most recorded shapes of a node replayed by default (evenly spread, first and last).
MAX_SHAPES = 16


def _checked(cache: str, variants: Sequence[str] | str | None, budget: float) -> list[str]:
    if cache not in CACHES:
        raise ArgumentError(f"cache must be one of {list(CACHES)}, got {cache!r}")
    if not isinstance(budget, (int, float)) or isinstance(budget, bool) or not budget > 0:
        raise ArgumentError(f"budget must be a positive number of seconds, got {budget!r}")
    if isinstance(variants, str):
        variants = [v.strip() for v in variants.split(",") if v.strip()]
    return list(variants or [])


def _timed(built: Rebuilt, cache: str, share: float) -> dict[str, float]:
    """The isolated medians a `cache` choice asks for (NaN for the other)."""
    found = {"warm_ns": math.nan, "cold_ns": math.nan}
    for kind in ("warm", "cold"):
        if cache in (kind, "both"):
            found[f"{kind}_ns"] = time_alone(built, kind, share)
    return found


def _variant_rows(built: Rebuilt, names: list[str], share: float,
                  per_call: float) -> tuple[VariantRow, ...]:
    """Each variant against the as-is call, each on its own inputs of equal values (fresh
    copies per timed call for an in-place node)."""
    args, kwargs = built.inputs()
    calls = [variant_call(name, built, *built.inputs()) for name in names]
    fresh = on_fresh_copies(built.target, args, kwargs) if built.mutates else None
    most = pool_calls(args, MAX_CALLS, cache_bytes(args)) if built.mutates else MAX_CALLS
    return compare_variants(bound(built.target, args, kwargs), calls, share / len(calls),
                            per_call, fresh, most)


def replay(profile: Profile, node: str, model: Any = None,
           variants: Sequence[str] | str | None = None, budget: float = 2.0,
           cache: str = "warm", shapes: int | None = MAX_SHAPES) -> ReplayResult:
    """Rebuild `node` (a node name or module path) alone and time it with bench().

    The node's module (a copy, with the model's weights) or function runs on fresh random
    inputs of its recorded shapes, dtypes and strides, in the profile's grad and eval modes;
    an in-place op gets fresh inputs at every call (docs/replay.md). A node that saw several
    shapes (a module called at several nodes, a decode step over a growing cache) is replayed
    once per shape, beside the in-graph median of its calls; `shapes`: the most replayed,
    evenly spread (None: all). `model`: default, the profiled model while it is alive.
    `cache`: "warm" (the same inputs), "cold" (inputs and weights rotated through copies
    larger than the last-level cache) or "both". `variants` (replay_variants.VARIANTS, e.g.
    ["channels_last", "threads=1"]): each against the first shape's as-is call, in
    interleaved blocks. `budget`: seconds, shared between shapes, caches and variants.

    Example:
        >>> import pyfxprof
        >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(inplace=True))
        >>> prof = pyfxprof.profile(net, (torch.randn(1, 3, 16, 16),), runs=5, warmup=1)
        >>> result = prof.replay("0", budget=0.2)
        >>> result.node, result.op, result.warm_ns > 0      # "0": the module path, node "_0"
        ('_0', 'call_module', True)
        >>> prof.replay("1", budget=0.1).fresh_inputs       # ReLU(inplace=True)
        True
    """
    names = _checked(cache, variants, budget)
    recorded = rebuild_shapes(profile, node, model)
    chosen = on_a_copy(_spread(recorded, shapes))
    share = budget / (2 if cache == "both" else 1) / (2 if names else 1) / len(chosen)
    grad, training = (bool(profile.meta.get(k, False)) for k in ("grad", "training"))
    module = chosen[0].module
    mode = contextlib.nullcontext() if module is None else evaluation_mode(module, not training)
    rows: list[ShapeRow] = []
    with mode, torch.set_grad_enabled(grad):
        for built in chosen:
            built.mutates = mutates_inputs(built.target, *built.inputs())
            timed = _timed(built, cache, share)
            rows.append(ShapeRow(_shapes_text(profile, built), built.nodes,
                                 in_graph_ns=built.in_graph_ns, calls=built.calls,
                                 own_in_graph=built.own_in_graph, **timed))
        first = chosen[0]
        per_call = rows[0].warm_ns if math.isfinite(rows[0].warm_ns) else rows[0].cold_ns
        found = _variant_rows(first, names, share * len(chosen), per_call) if names else ()
    return ReplayResult(first.name, first.op, first.target_name, rows[0].input_shapes,
                        warm_ns=rows[0].warm_ns, cold_ns=rows[0].cold_ns,
                        in_graph_ns=first.in_graph_ns, budget_s=float(budget), variants=found,
                        shapes=tuple(rows) if len(rows) > 1 else (),
                        fresh_inputs=first.mutates,
                        recorded_shapes=len(recorded) if len(recorded) > len(rows) else 0)


def _spread(shapes: list[Rebuilt], most: int | None) -> list[Rebuilt]:
    """At most `most` of the shapes, evenly spread (the first and the last kept).

    Example:
        >>> [s for s in _spread(list(range(10)), 4)]
        [0, 3, 6, 9]
    """
    if most is not None and (not isinstance(most, int) or isinstance(most, bool) or most < 1):
        raise ArgumentError(f"shapes must be a positive number of shapes or None, got {most!r}")
    if most is None or len(shapes) <= most:
        return shapes
    if most == 1:
        return shapes[:1]
    picks = sorted({round(k * (len(shapes) - 1) / (most - 1)) for k in range(most)})
    return [shapes[k] for k in picks]


def _shapes_text(profile: Profile, built: Rebuilt) -> str:
    """The input_shapes the profile shows for the node of `built` (for a loop's shape, those
    of the call rebuilt)."""
    if built.sized:
        return spec_text({"tuple": built.spec["args"]})
    return str(node_row(profile, built.name).get("input_shapes", ""))
