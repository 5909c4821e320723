"""Variants of a replayed node against its as-is call: interleaved blocks of calls (order
alternating), paired log ratios judged with the stats stage's signed-rank test, Hodges–Lehmann
interval, Benjamini–Hochberg q-values and verdict rule; and the outputs' numeric difference."""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np
import torch

from ..capture.node_bytes import tensors
from ..data.replay_result import VariantRow
from ..errors import first_line
from ..stats.rank_tests import benjamini_hochberg, hodges_lehmann, signed_rank_p
from ..stats.verdict_rule import adjusted_confidence, verdicts
from ..run.replay_inplace import block_ns
from .replay_variants import TOLERANCE, VariantCall
from ..stats.confidence import FALSE_DISCOVERY_RATE

#: The smallest change (fraction) a verdict calls slower or faster, and the false discovery
#: rate over a replay's variants (as pyfxprof.compare's defaults).
MIN_CHANGE, FDR = 0.02, FALSE_DISCOVERY_RATE
#: Time per block of back-to-back calls (ns), the blocks' bounds, and the most calls a block.
BLOCK_NS, MIN_BLOCKS, MAX_BLOCKS, MAX_CALLS = 500_000, 8, 400, 500


def paired_blocks(base: Callable[[], Any], variant: VariantCall, budget: float,
                  per_call_ns: float, base_fresh: Callable[[], Callable] | None = None,
                  max_calls: int = MAX_CALLS) -> tuple[np.ndarray, np.ndarray]:
    """ns per call of the as-is and the variant call, block by block, their order alternating,
    until `budget` seconds are spent (MIN_BLOCKS to MAX_BLOCKS pairs), one pair of warm-up.
    For an in-place node (`base_fresh` and ``variant.fresh`` given) each call of a block runs
    on its own fresh copy of the inputs, made before the block; `max_calls` bounds a block.

    Example:
        >>> import contextlib
        >>> same = VariantCall("same", lambda: None, contextlib.nullcontext, torch.float32)
        >>> base, other = paired_blocks(lambda: None, same, 0.0, 100.0)
        >>> len(base) == len(other) == MIN_BLOCKS
        True
    """
    calls = int(max(1, min(max_calls, BLOCK_NS // max(per_call_ns, 1.0))))
    pairs: list[tuple[float, float]] = []
    deadline = time.monotonic() + budget
    for index in range(MAX_BLOCKS + 1):
        timings: dict[str, float] = {}
        for side in (("base", "variant") if index % 2 == 0 else ("variant", "base")):
            if side == "base":
                timings[side] = block_ns(base, calls, base_fresh)
            else:
                with variant.context():
                    timings[side] = block_ns(variant.call, calls, variant.fresh)
        if index:  # the first pair is the warm-up
            pairs.append((timings["base"], timings["variant"]))
        if len(pairs) >= MIN_BLOCKS and time.monotonic() > deadline:
            break
    found = np.array(pairs, dtype=np.float64)
    return found[:, 0], found[:, 1]


def output_error(reference: Any, output: Any) -> tuple[float, float]:
    """Max absolute difference of two outputs' tensors and that over the reference's largest
    magnitude (NaN when they hold no tensor or differ in shape).

    Example:
        >>> output_error(torch.tensor([1.0, -4.0]), torch.tensor([1.5, -4.0]))
        (0.5, 0.125)
    """
    pairs = list(zip(tensors(reference), tensors(output)))
    if not pairs or any(a.shape != b.shape for a, b in pairs):
        return math.nan, math.nan
    absolute = max(float((a.double() - b.double()).abs().max()) if a.numel() else 0.0
                   for a, b in pairs)
    scale = max(float(a.double().abs().max()) if a.numel() else 0.0 for a, _ in pairs)
    return absolute, absolute / scale if scale > 0 else (0.0 if absolute == 0 else math.inf)


def _snapshot(value: Any) -> list[torch.Tensor]:
    """Copies of an output's tensors (a later in-place call must not change them)."""
    return [t.detach().clone() for t in tensors(value)]


def _judged(name: str, base: np.ndarray, other: np.ndarray, confidence: float, q: float,
            errors: tuple[float, float], tolerance: float) -> VariantRow:
    """A variant's row from its paired blocks against the as-is ones."""
    estimate, low, high = hodges_lehmann(np.log(other / base), confidence)
    change, low, high = math.expm1(estimate), math.expm1(low), math.expm1(high)
    verdict = verdicts([change], [low], [high], [q], MIN_CHANGE, FDR)[0]
    return VariantRow(name, float(np.median(other)), change, low, high, float(q), str(verdict),
                      errors[0], errors[1], bool(errors[1] > tolerance))


def compare_variants(base: Callable[[], Any], variants: list[VariantCall], budget: float,
                     per_call_ns: float, base_fresh: Callable[[], Callable] | None = None,
                     max_calls: int = MAX_CALLS) -> tuple[VariantRow, ...]:
    """One row per variant against the as-is `base` call, `budget` seconds each. The outputs
    are compared on the first call of each, before its timing: give each its own inputs of
    equal values (an in-place op changes its inputs at every call); `base_fresh` (an in-place
    node's) makes as-is calls on fresh copies of the inputs for the timed blocks, at most
    `max_calls` a block (a pool of copies that stays in cache).

    Example:
        >>> from pyfxprof.tools.replay_variants import VariantCall
        >>> import contextlib
        >>> x = torch.randn(256)
        >>> same = VariantCall("same", lambda: torch.relu(x), contextlib.nullcontext,
        ...                    torch.float32)
        >>> row, = compare_variants(lambda: torch.relu(x), [same], 0.05, 1000.0)
        >>> row.name, row.max_abs_error
        ('same', 0.0)
    """
    reference = _snapshot(base())  # before any timing: an in-place op changes its inputs
    measured, failed = {}, {}
    for variant in variants:
        try:
            with variant.context():
                errors = output_error(reference, variant.call())
            blocks = paired_blocks(base, variant, budget, per_call_ns, base_fresh, max_calls)
            measured[variant.name] = (blocks, errors,
                                      TOLERANCE.get(variant.dtype, 1e-4))
        except Exception as error:  # a variant this machine or op does not run: a row saying so
            failed[variant.name] = f"{type(error).__name__}: {first_line(error)}"
    names = list(measured)
    q_values: Any = benjamini_hochberg([signed_rank_p(np.log(measured[n][0][1] / measured[n][0][0]))
                                   for n in names]) if names else []
    confidence = adjusted_confidence(q_values, FDR) if names else 0.0
    rows = {}
    for name, q in zip(names, q_values):
        (base_ns, variant_ns), errors, tolerance = measured[name]
        rows[name] = _judged(name, base_ns, variant_ns, confidence, q, errors, tolerance)
    rows.update({n: VariantRow(n, error=text) for n, text in failed.items()})
    return tuple(rows[v.name] for v in variants)
