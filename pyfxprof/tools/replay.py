"""Profile.replay: a profiled node rebuilt and timed alone (warm, cold or both) beside its
in-graph median, and the variants tried on it against the as-is call (docs/replay.md)."""

from __future__ import annotations

import contextlib
import math
from typing import Any, Sequence

import torch

from ..capture.model_state import evaluation_mode
from ..data.profile import Profile
from ..data.replay_result import ReplayResult
from ..errors import ArgumentError
from .replay_build import Rebuilt, node_row, rebuild
from .replay_compare import compare_variants
from .replay_timing import time_alone
from .replay_variants import variant_call

#: The choices of replay's cache=.
CACHES = ("warm", "cold", "both")


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
            found[f"{kind}_ns"] = time_alone(built, kind, share).median
    return found


def replay(profile: Profile, node: str, model: Any = None,
           variants: Sequence[str] | str | None = None, budget: float = 2.0,
           cache: str = "warm") -> ReplayResult:
    """Rebuild `node` (a node name or module path) alone and time it with bench().

    The node's module (the model's own, weights included) or function runs on fresh random
    inputs of its recorded shapes, dtypes and strides, in the profile's grad mode and with
    the module in eval mode as profiled (restored after). `model`: the profiled model
    (default: the one profiled, while it is alive). `cache`: "warm" (the same inputs each
    call), "cold" (inputs and weights rotated through copies larger than the last-level
    cache) or "both". `variants` (replay_variants.VARIANTS, e.g. ["channels_last",
    "threads=1"]) are each compared with the as-is call in interleaved blocks. `budget`:
    seconds for the timing, shared between the caches and the variants.

    Example:
        >>> import pyfxprof
        >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())
        >>> prof = pyfxprof.profile(net, (torch.randn(1, 3, 16, 16),), runs=5, warmup=1)
        >>> result = prof.replay("0", budget=0.2)
        >>> result.node, result.op, result.warm_ns > 0      # "0": the module path, node "_0"
        ('_0', 'call_module', True)
    """
    names = _checked(cache, variants, budget)
    built = rebuild(profile, node, model)
    share = budget / (2 if cache == "both" else 1) / (2 if names else 1)
    grad, training = (bool(profile.meta.get(k, False)) for k in ("grad", "training"))
    mode = (contextlib.nullcontext() if built.module is None
            else evaluation_mode(built.module, not training))
    with mode, torch.set_grad_enabled(grad):
        timed = _timed(built, cache, share)
        rows: tuple = ()
        if names:
            args, kwargs = built.inputs()  # each variant on its own inputs of equal values
            calls = [variant_call(name, built, *built.inputs()) for name in names]
            per_call = timed["warm_ns"] if math.isfinite(timed["warm_ns"]) else timed["cold_ns"]
            rows = compare_variants(lambda: built.target(*args, **kwargs), calls,
                                    share / len(calls), per_call)
    row = node_row(profile, node)
    return ReplayResult(built.name, built.op, built.target_name, str(row.get("input_shapes", "")),
                        in_graph_ns=built.in_graph_ns, budget_s=float(budget), variants=rows,
                        **timed)

