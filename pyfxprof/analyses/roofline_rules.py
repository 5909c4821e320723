"""The advisor's roofline rules (docs/advisor.md, docs/roofline.md): memory-bound runs of
element-wise nodes (fuse or compile), overhead-bound nodes (batch, compile, CUDA graphs),
compute-bound nodes at low efficiency (channels_last, bf16, a better kernel) and fresh
outputs first touched on every call (a kept buffer, in place). Silent on a profile without
the machine's peaks."""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

from ..data.roofline import roofline
from ..data.units import format_flops, format_ns, format_pct, plural
from ..errors import PyfxprofError
from ..data.advice import Suggestion
from .advice import Context, register_rule

#: Op kinds whose memory-bound neighbours one fused kernel could run (data.roofline_ops).
FUSIBLE_KINDS = frozenset({"elementwise", "norm", "softmax", "reduction", "copy"})
#: A run of fusible memory-bound nodes needs this many nodes...
MIN_RUN = 2
#: ...and, as every rule here, this share of the run (percent) to be worth a suggestion.
MIN_PCT = 1.0
#: A compute-bound node is inefficient when even its interval's upper end is below this.
LOW_EFFICIENCY = 0.3
#: Overhead-bound savings: assume half of the nodes' time above their roofs goes away.
ESTIMATE_FRACTION = 0.5


def _roofline(profile, context: Context) -> pd.DataFrame | None:
    """The profile's node roofline with each row's Context row (``row``), or None without
    peaks."""
    try:
        frame = roofline(profile)
    except PyfxprofError:
        return None
    rows = {name: row for row, name in context.stats["name"].astype(str).items()}
    frame["row"] = frame["name"].map(rows)
    return frame.dropna(subset=["row"]).astype({"row": int})


def _line(context: Context, entry) -> str:
    """One evidence line: the node's citation, bound, efficiency with its interval, rates."""
    return (f"{context.cite(entry.row)}: {entry.bound}-bound, efficiency "
            f"{entry.efficiency:.2f} [{entry.efficiency_low:.2f}, {entry.efficiency_high:.2f}]"
            f" ({format_flops(entry.flops_per_s, 'FLOP/s')}, "
            f"{format_flops(entry.bytes_per_s, 'B/s')}, roof {format_ns(entry.roof_ns)})")


def memory_runs(frame: pd.DataFrame) -> list[list[int]]:
    """Positions of runs of consecutive (execution order) memory-bound nodes of FUSIBLE_KINDS,
    at least MIN_RUN long.

    Example:
        >>> frame = pd.DataFrame({"bound": ["memory", "memory", "compute", "memory"],
        ...                       "kind": ["norm", "elementwise", "conv", "elementwise"]})
        >>> memory_runs(frame)
        [[0, 1]]
    """
    runs, current = [], []
    for position, (bound, kind) in enumerate(zip(frame["bound"], frame["kind"])):
        if bound == "memory" and kind in FUSIBLE_KINDS:
            current.append(position)
            continue
        runs.append(current)
        current = []
    runs.append(current)
    return [run for run in runs if len(run) >= MIN_RUN]


@register_rule("roofline_fuse")
def roofline_fuse(profile, context: Context) -> list[Suggestion]:
    """Runs of memory-bound element-wise nodes: each writes what the next reads back from
    memory; one fused kernel would move the run's inputs and outputs once."""
    frame = _roofline(profile, context)
    if frame is None:
        return []
    found = []
    for run in memory_runs(frame):
        part = frame.iloc[run]
        median = float(part["median_ns"].sum())
        if not context.pct(median) >= MIN_PCT:
            continue
        saving = median * (1.0 - 1.0 / len(run))
        evidence = [f"{len(run)} consecutive memory-bound nodes take {format_ns(median)} "
                    f"({format_pct(context.pct(median))}), moving "
                    f"{format_flops(float(part['bytes'].sum()), 'B')} at least "
                    f"(triad {format_flops(frame.attrs['peaks']['bandwidth'], 'B/s')})",
                    f"saving is an estimate: a fused kernel moves the run's data once instead "
                    f"of {len(run)} times, (1 - 1/{len(run)}) of their time; measure it"]
        evidence += context.cite_many(part.itertuples(), lambda e: _line(context, e))
        found.append(Suggestion(
            "roofline_fuse", "medium" if context.pct(saving) >= MIN_PCT else "low",
            f"Fuse {len(run)} memory-bound element-wise nodes from "
            f"{part['name'].iloc[0]}", evidence,
            "torch.compile(model) fuses them into one kernel; or write the chain as one op"
            + context.replay_try(int(part["row"].iloc[0]), ["compile"]),
            saving, part["name"].tolist()))
    return found


@register_rule("roofline_overhead")
def roofline_overhead(profile, context: Context) -> list[Suggestion]:
    """Overhead-bound nodes: their op's fixed cost (measured on a minimal input) is above the
    time their roofs allow, so their time is per-call cost, not work."""
    frame = _roofline(profile, context)
    if frame is None:
        return []
    bound = frame[frame["bound"] == "overhead"].sort_values("median_ns", ascending=False,
                                                            kind="stable")
    median = float(bound["median_ns"].sum())
    if bound.empty or not context.pct(median) >= MIN_PCT:
        return []
    saving = ESTIMATE_FRACTION * float(bound["headroom"].sum())
    gpu = context.device == "cuda"
    evidence = [f"{plural(len(bound), 'node')} take {format_ns(median)} "
                f"({format_pct(context.pct(median))}) while at the roofs they would take "
                f"{format_ns(float(bound['roof_ns'].sum()))}: each costs about its op's fixed "
                "cost (one call on a minimal input, measured with the machine's peaks)",
                f"saving is an estimate: {ESTIMATE_FRACTION:.0%} of their time above the roofs"]
    evidence += context.cite_many(bound.itertuples(), lambda e: (
        f"{_line(context, e)}, fixed cost {format_ns(e.fixed_ns)}"))
    return [Suggestion(
        "roofline_overhead", "medium" if context.pct(median) >= 10 else "low",
        f"{plural(len(bound), 'overhead-bound node')}: per-call cost, not work", evidence,
        "give each call more work (batch inputs together), torch.compile(model) to fuse the "
        "small ops" + ("; CUDA graphs (torch.compile(mode='reduce-overhead')) to drop launch "
                       "costs" if gpu else "")
        + context.replay_try(int(bound["row"].iloc[0]), ["cuda_graph"] if gpu else ["compile"]),
        saving, bound["name"].tolist())]


#: The replay variant that tries each 16-bit dtype.
VARIANT_OF_DTYPE = {"bfloat16": "bf16", "float16": "fp16"}


def _kernel_hint(entry, peaks: dict) -> tuple[str, list[str]]:
    """What may raise a compute-bound node's efficiency: channels_last for a convolution, a
    16-bit dtype where the machine measured a faster GEMM, else a better kernel; and the
    replay variants that try each."""
    rates = peaks.get("flops", {})
    hints, variants = [], []
    if entry.kind == "conv":
        hints.append("channels_last (model.to(memory_format=torch.channels_last) and the "
                     "inputs)")
        variants.append("channels_last")
    fast = max((name for name in ("bfloat16", "float16") if rates.get(name)),
               key=lambda name: rates[name], default=None)
    if entry.dtype == "float32" and fast and rates[fast] > 1.5 * rates.get("float32", 0):
        hints.append(f"{fast} (this machine's GEMM peak: {format_flops(rates[fast], 'FLOP/s')} "
                     f"vs float32 {format_flops(rates['float32'], 'FLOP/s')}; autocast)")
        variants.append(VARIANT_OF_DTYPE[fast])
    return "; ".join(hints + ["a better kernel for these shapes (torch.compile "
                              "max-autotune, or a library kernel)"]), variants + ["compile"]


@register_rule("roofline_low_efficiency")
def roofline_low_efficiency(profile, context: Context) -> list[Suggestion]:
    """Compute-bound nodes whose efficiency interval lies below LOW_EFFICIENCY of the
    measured GEMM peak: the arithmetic runs slower than this machine can run it. Not where
    the runs waited for cores (the roofline's ``waited``): their time is then partly the
    scheduler's, not the kernel's."""
    frame = _roofline(profile, context)
    if frame is None:
        return []
    slow = frame[(frame["bound"] == "compute") & (frame["efficiency_high"] < LOW_EFFICIENCY)
                 & ~frame["waited"].astype(bool)]
    slow = slow.loc[np.array([context.pct(ns) >= MIN_PCT for ns in slow["median_ns"]],
                             dtype=bool)]
    found = []
    for entry in slow.sort_values("headroom", ascending=False, kind="stable").itertuples():
        headroom = cast(float, entry.headroom)  # a float column (pandas types any cell)
        evidence = [_line(context, entry),
                    f"efficiency {entry.efficiency_high:.2f} at most (the upper end of its 95% "
                    f"interval) of the {entry.dtype} GEMM peak "
                    f"{format_flops(frame.attrs['peaks']['flops'].get(entry.dtype), 'FLOP/s')}",
                    f"saving: its headroom, {format_ns(entry.headroom)} above the roof"]
        hint, variants = _kernel_hint(entry, frame.attrs["peaks"])
        found.append(Suggestion(
            "roofline_low_efficiency", "medium" if context.pct(headroom) >= 5
            else "low", f"{entry.name}: compute-bound at {entry.efficiency:.0%} of the peak",
            evidence, "try " + hint + context.replay_try(cast(int, entry.row), variants),
            float(headroom), [str(entry.name)]))
    return found


@register_rule("roofline_first_touch")
def roofline_first_touch(profile, context: Context) -> list[Suggestion]:
    """Nodes whose fresh outputs the timed runs faulted in (or, in a profile without a fault
    count, that the allocator maps anew on every call): part of their time is the first
    touch of those pages (page faults, zeroing), which a kept buffer avoids."""
    frame = _roofline(profile, context)
    if frame is None:
        return []
    fresh = frame[frame["first_touch_ns"] > 0].sort_values("first_touch_ns", ascending=False,
                                                            kind="stable")
    touch = float(np.minimum(fresh["first_touch_ns"], fresh["median_ns"]).sum())
    if fresh.empty or not context.pct(touch) >= MIN_PCT:
        return []
    peaks, faults = frame.attrs["peaks"], profile.meta.get("faults_per_run")
    which = (f"whose pages the timed runs faulted in ({faults:.0f} page faults per run)"
             if faults is not None else
             f"of {format_flops(peaks['first_touch_bytes'], 'B')} or more, which this machine "
             "maps anew on every call")
    evidence = [f"{plural(len(fresh), 'node')} write fresh outputs {which}; their first touch "
                f"costs {peaks['first_touch_ns_per_byte']:.2g} ns per byte (measured with the "
                f"peaks): {format_ns(touch)} ({format_pct(context.pct(touch))}) of the run"]
    evidence += context.cite_many(fresh.itertuples(), lambda e: (
        f"{_line(context, e)}, first touch {format_ns(e.first_touch_ns)}"))
    return [Suggestion(
        "roofline_first_touch", "medium" if context.pct(touch) >= 10 else "low",
        f"{plural(len(fresh), 'node')} first-touch a fresh output on every call", evidence,
        "write into a buffer kept between calls (torch.add(x, y, out=buffer)) or in place "
        "(x.add_(y)) where the input is not needed again", touch, fresh["name"].tolist())]
