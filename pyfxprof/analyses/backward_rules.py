"""The advisor rule for training steps: nodes whose backward takes far longer than their
forward (docs/advisor.md)."""

from __future__ import annotations

import numpy as np

from ..data.units import format_ns, format_pct, plural
from ..data.advice import Suggestion
from .advice import Context, register_rule

BACKWARD_RATIO = 3.0     # a node's backward median over its forward median beyond this
MIN_BACKWARD_PCT = 1.0   # and worth at least this share of the step (percent)


@register_rule("slow_backward")
def slow_backward(profile, context: Context) -> list[Suggestion]:
    """Nodes whose backward median is > BACKWARD_RATIO x their forward median and >= 1% of
    the step (profiles with backward samples only)."""
    stats = context.stats
    if "backward_ratio" not in stats:
        return []
    ratio = stats["backward_ratio"].to_numpy(dtype=float)
    worth = stats["backward_median"].map(context.pct).to_numpy(dtype=float) >= MIN_BACKWARD_PCT
    rows = [int(r) for r in np.flatnonzero((ratio > BACKWARD_RATIO) & worth)]
    if not rows:
        return []
    rows.sort(key=lambda row: -context.ns(row, "backward_median"))
    excess = float(sum(context.ns(r, "backward_median") - BACKWARD_RATIO * context.ns(r)
                       for r in rows))
    evidence = [f"{plural(len(rows), 'node')} with backward > {BACKWARD_RATIO:g}x forward, "
                f"together {format_ns(float(stats['backward_median'][rows].sum()))} of backward"]
    evidence += context.cite_many(rows, lambda row: (
        f"{context.cite(row)}; backward {format_ns(context.ns(row, 'backward_median'))} "
        f"({ratio[row]:.1f}x, {format_pct(context.pct(context.ns(row, 'backward_median')))})"))
    return [Suggestion(
        "slow_backward", "medium" if context.pct(excess) >= 5 else "low",
        f"{plural(len(rows), 'node')} with a disproportionate backward", evidence,
        "look for ops with slow or non-fused gradients (index_put / scatter, embedding with "
        "many repeated indices, in-place ops forcing copies, custom autograd Functions, "
        "weight gradients of tiny batches); torch.compile fuses the backward too",
        excess, context.names(rows))]
