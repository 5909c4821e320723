"""The built-in advisor rules: fusible Conv/BN pairs, overhead-bound graphs, hotspots, low
achieved FLOP/s, noisy measurements, known slow ops, machine noise (preempted runs), too short a
warm-up. Each registers itself with ``advice.register_rule`` and cites the nodes and times it
rests on (docs/advisor.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, cast

import numpy as np
import pandas as pd

from ..stats.node_statistics import noisy_mask, relative_iqr
from ..data.units import format_flops, format_ns, format_pct, plural
from ..data.advice import Suggestion
from .advice import Context, register_rule, what

TINY_NS = 10_000           # a node faster than this is mostly per-op dispatch overhead
MIN_TINY_NODES = 10        # overhead-bound needs at least this many tiny nodes,
TINY_NODE_SHARE = 0.5      # making up at least this share of the nodes
TINY_TIME_PCT = 25.0       # and of the median run (percent)
ESTIMATE_FRACTION = 0.5    # overhead-bound savings: assume half of the overhead goes away
HOTSPOT_SHARE = 0.8        # hotspots: smallest set of nodes with this share of node time
LOW_FLOPS_RATIO = 0.10     # low FLOP/s: below this fraction of the model's best node
MIN_NODE_PCT = 1.0         # nodes below this share of the run are not worth a suggestion


def _severity(pct: float) -> str:
    """Severity of a saving worth ``pct`` percent of the run."""
    return "high" if pct >= 5 else "medium" if pct >= MIN_NODE_PCT else "low"


def _as_names(value) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else ()


def _by_median(stats: pd.DataFrame, rows, column: str = "median") -> list[int]:
    """``rows`` sorted by ``column`` (a median), largest first; ties keep execution order."""
    rows = list(rows)
    order = np.argsort(-stats.loc[rows, column].to_numpy(dtype=float), kind="stable")
    return [rows[i] for i in order]


# --- rules -------------------------------------------------------------------------------------

#: The BatchNorm type that folds into each conv/linear type (as in pyfxprof.tools.fusion).
_BN_AFTER = {"Conv1d": "BatchNorm1d", "Conv2d": "BatchNorm2d", "Conv3d": "BatchNorm3d",
             "Linear": "BatchNorm1d"}


def fusible_pairs(stats: pd.DataFrame) -> list[tuple[int, int]]:
    """(conv row, bn row) pairs where a conv/linear's output is read only by a matching BN.

    Uses the ``inputs`` column (graph edges; no column, no pairs); a conv module called from
    several nodes is never paired (folding would change its other calls), as in fuse_conv_bn.
    Example: ``fusible_pairs(prof.to_dataframe())`` -> ``[(1, 2), (5, 6)]``
    """
    if "inputs" not in stats:
        return []
    readers: dict[str, list[int]] = {}
    for row, inputs in enumerate(stats["inputs"]):
        for name in dict.fromkeys(_as_names(inputs)):
            readers.setdefault(name, []).append(row)
    modules = stats[stats["op"] == "call_module"]
    calls = modules["target"].value_counts().to_dict()
    pairs = []
    for conv, name, module_type, target in zip(modules.index, modules["name"],
                                                modules["module_type"], modules["target"]):
        users = readers.get(name, [])
        bn_type = _BN_AFTER.get(module_type)
        if bn_type is None or calls[target] > 1 or len(users) != 1:
            continue
        bn = users[0]
        if (stats.at[bn, "op"] == "call_module" and stats.at[bn, "module_type"] == bn_type
                and _as_names(stats.at[bn, "inputs"]) == (name,)):
            pairs.append((conv, bn))
    return pairs


@register_rule("fusible_conv_bn")
def fusible_conv_bn(profile, context: Context) -> list[Suggestion]:
    """Conv→BN pairs that ``fuse_conv_bn`` can fold; saving ≈ the BNs' median time."""
    stats = context.stats
    pairs = fusible_pairs(stats)
    if not pairs:
        return []
    median = stats["median"]
    bn_ns = float(sum(median[bn] for _, bn in pairs))
    pair_ns = bn_ns + float(sum(median[conv] for conv, _ in pairs))
    pairs.sort(key=lambda pair: -median[pair[1]])
    evidence = [f"{plural(len(pairs), 'Conv→BatchNorm pair')}: {format_ns(pair_ns)} "
                f"({format_pct(context.pct(pair_ns))}) in total, of which the BatchNorms "
                f"{format_ns(bn_ns)} ({format_pct(context.pct(bn_ns))})"]
    evidence += context.cite_many(pairs, lambda pair: (
        f"{context.cell(pair[0], 'name')} → {context.cell(pair[1], 'name')}: BatchNorm "
        f"{format_ns(median[pair[1]])} ({format_pct(context.pct(median[pair[1]]))}), "
        f"{context.cell(pair[0], 'module_type')} {format_ns(median[pair[0]])}"))
    return [Suggestion(
        "fusible_conv_bn", _severity(context.pct(bn_ns)),
        f"Fold {plural(len(pairs), 'eval-mode BatchNorm')} into the preceding "
        "convolution/linear", evidence,
        _eval_first(profile.meta) + "pyfxprof.fuse_conv_bn(model) / pyfxprof fuse MODEL "
        "--bench (inference only; the fusion report lists every pair it folds or skips and why)",
        bn_ns, [name for pair in pairs for name in context.names(pair)])]


def _eval_first(meta: dict) -> str:
    """The start of a fix that needs an eval-mode model, when the profiled one was not.

    >>> _eval_first({"training": False, "given_training": True})
    'call model.eval() first (your model is in train mode, which fuse_conv_bn refuses: folding uses the running statistics only eval mode reads), then '
    """
    if not (meta.get("given_training") or meta.get("training")):
        return ""
    return ("call model.eval() first (your model is in train mode, which fuse_conv_bn "
            "refuses: folding uses the running statistics only eval mode reads), then ")


@register_rule("overhead_bound")
def overhead_bound(profile, context: Context) -> list[Suggestion]:
    """Many tiny nodes (CPU), or host time above device time (GPU): per-op overhead dominates."""
    if "device_median" in context.stats:
        return _launch_bound(context)
    stats = context.stats
    tiny = stats.index[stats["median"] < TINY_NS]
    tiny_ns = float(stats["median"][tiny].sum())
    if (len(tiny) < MIN_TINY_NODES or len(tiny) < TINY_NODE_SHARE * len(stats)
            or not context.pct(tiny_ns) >= TINY_TIME_PCT):
        return []
    evidence = [
        f"{len(tiny)} of {len(stats)} nodes ({len(tiny) / len(stats):.0%}) have a median under "
        f"{format_ns(TINY_NS)}; together they take {format_ns(tiny_ns)} "
        f"({format_pct(context.pct(tiny_ns))})",
        "at that size a node's time is mostly per-op Python and dispatcher overhead",
        f"saving is an estimate: {ESTIMATE_FRACTION:.0%} of the tiny nodes' time; measure it",
        "largest tiny nodes:"]
    evidence += context.cite_many(_by_median(stats, tiny))
    severity = "high" if context.pct(tiny_ns) >= 50 else "medium"
    return [Suggestion(
        "overhead_bound", severity, "Overhead-bound: many tiny nodes", evidence,
        "torch.compile(model) to fuse small ops and drop per-op dispatch; or give each call "
        "more work (larger batches)" + context.replay_try(_by_median(stats, tiny)[0],
                                                          ["compile"]),
        ESTIMATE_FRACTION * tiny_ns, context.names(tiny))]


def _launch_bound(context: Context) -> list[Suggestion]:
    stats = context.stats
    host, device = stats["median"], stats["device_median"]
    host_ns, device_ns = float(host.sum()), float(device.sum())
    if not host_ns > device_ns:
        return []
    gap = host - device
    bound = sorted(stats.index[gap > 0], key=lambda row: -gap[row])
    evidence = [
        f"host time {format_ns(host_ns)} exceeds device time {format_ns(device_ns)} "
        "(sums of node medians): the GPU waits for the CPU to launch work",
        f"saving is an estimate: {ESTIMATE_FRACTION:.0%} of the host-device gap; measure it",
        f"{len(bound)} of {len(stats)} nodes spend longer launching than running; largest gaps:"]
    evidence += context.cite_many(bound, lambda row: (
        f"{context.cell(row, 'name')} ({what(stats.loc[row])}): host {format_ns(host[row])}, "
        f"device {format_ns(device[row])}"))
    severity = "high" if host_ns >= 2 * device_ns else "medium"
    return [Suggestion(
        "overhead_bound", severity, "Launch-bound: host time above device time", evidence,
        "capture the model in CUDA graphs (torch.compile(model, mode='reduce-overhead') or "
        "torch.cuda.CUDAGraph), or torch.compile to fuse kernels; larger batches amortise "
        "launches" + (context.replay_try(bound[0], ["cuda_graph", "compile"]) if bound else ""),
        ESTIMATE_FRACTION * (host_ns - device_ns), context.names(bound))]


@register_rule("hotspots")
def hotspots(profile, context: Context) -> list[Suggestion]:
    """Smallest set of nodes making up HOTSPOT_SHARE of the summed node medians (device
    medians with device samples: that is where a GPU's time goes)."""
    stats = context.stats
    column = "device_median" if "device_median" in stats else "median"
    node_sum = float(stats[column].sum())
    if not node_sum > 0:
        return []
    order = _by_median(stats, stats.index, column)
    share = np.cumsum(stats[column][order].to_numpy()) / node_sum
    count = min(int((share < HOTSPOT_SHARE - 1e-9).sum()) + 1, len(order))
    rows = order[:count]
    kinds = [what(row) for row in stats.loc[rows, ["op", "module_type", "target"]].to_dict("records")]
    by_kind = stats[column][rows].groupby(np.array(kinds, dtype=object)).agg(["size", "sum"])
    by_kind = by_kind.sort_values("sum", ascending=False, kind="stable").head(3)
    kind_of_time = "device time" if column == "device_median" else "node time"
    evidence = [f"{count} of {len(stats)} nodes make up {share[count - 1]:.1%} of {kind_of_time} "
                f"(sum of node {column.replace('_', ' ')}s {format_ns(node_sum)})",
                "by kind: " + ", ".join(f"{kind} x{int(size)} {format_pct(context.pct(ns))}"
                                        for kind, (size, ns) in by_kind.iterrows())]
    evidence += context.cite_many(rows, lambda row: context.cite(row, column))
    return [Suggestion(
        "hotspots", "info", f"{count} of {len(stats)} nodes take {share[count - 1]:.0%} of the "
        "time", evidence, f"optimise these first; prof.table(sort_by='median', top={count}) "
        "lists them" + context.replay_try(
            rows[0], [], cache="both", why="whether the first costs in the graph what it "
            "costs alone, warm or cold"), None, context.names(rows))]


@register_rule("low_flops")
def low_flops(profile, context: Context) -> list[Suggestion]:
    """Nodes >= 1% of the run at < 10% of the best node's FLOP/s (needs a ``flops`` column)."""
    stats = context.stats
    if "flops" not in stats:
        return []
    flops = pd.to_numeric(stats["flops"], errors="coerce")
    median = stats["median"]
    rated = stats.index[(flops > 0) & (median > 0)]
    if len(rated) < 2:
        return []
    rate = flops[rated] / (median[rated] * 1e-9)
    best = cast(int, rate.idxmax())  # a label of stats' RangeIndex (pandas' types: Hashable)
    slow = [row for row in rated if rate[row] < LOW_FLOPS_RATIO * rate[best]
            and context.pct(median[row]) >= MIN_NODE_PCT]
    if not slow:
        return []
    slow = _by_median(stats, slow)
    slow_ns = float(median[slow].sum())
    evidence = [f"best: {context.cell(best, 'name')} ({what(stats.loc[best])}) at "
                f"{format_flops(rate[best], 'FLOP/s')}",
                f"{len(slow)} nodes worth >= {MIN_NODE_PCT:g}% each run below "
                f"{LOW_FLOPS_RATIO:.0%} of that, together {format_ns(slow_ns)} "
                f"({format_pct(context.pct(slow_ns))}):"]
    evidence += context.cite_many(slow, lambda row: (
        f"{context.cite(row)}: {format_flops(rate[row], 'FLOP/s')} ({rate[row] / rate[best]:.1%} of best)"))
    return [Suggestion(
        "low_flops", "medium" if context.pct(slow_ns) >= 10 else "low",
        f"{plural(len(slow), 'node')} with low achieved FLOP/s (likely memory-bound)", evidence,
        "they move more bytes than they compute: fuse them with their neighbours "
        "(torch.compile), try channels_last memory format, or a lower-precision dtype"
        + context.replay_try(slow[0], ["channels_last", "bf16", "compile"]),
        None, context.names(slow))]


@register_rule("noisy")
def noisy(profile, context: Context) -> list[Suggestion]:
    """Nodes >= 1% of the total whose IQR exceeds 10% of their median (stats.noisy_mask)."""
    stats = context.stats
    rows = _by_median(stats, stats.index[noisy_mask(stats)])
    if not rows:
        return []
    rel = relative_iqr(stats)
    runs, threads = profile.n_runs, profile.meta.get("threads", "?")
    evidence = [f"measured over {runs} runs with {threads} threads"] + context.cite_many(
        rows, lambda row: f"{context.cite(row)}: IQR {format_ns(context.ns(row, 'iqr'))} = "
                          f"{rel[row]:.0%} of the median")
    return [Suggestion(
        "noisy", "low", plural(len(rows), "noisy measurement"), evidence,
        f"re-run with more runs (--runs {max(2 * runs, 50)}), pin threads (--threads N and "
        "taskset -c 0-<N-1>) on a quiet machine; treat differences smaller than the IQR as "
        "noise", None, context.names(rows))]


@dataclass(frozen=True)
class SlowOp:
    """An entry of KNOWN_SLOW_OPS: nodes on ``device`` for which ``matches(row)`` is true."""

    device: str                            # "cpu" or "cuda"
    label: str                             # short name, in the suggestion's title
    matches: Callable[[dict], bool]        # row of Context.stats (a dict) -> is it this op?
    why: str                               # first evidence line
    action: str


_HOST_SYNC_OPS = frozenset({"item", "tolist", "cpu", "numpy", "nonzero", "argwhere",
                            "masked_select", "unique", "unique_consecutive", "synchronize"})


def _is_host_sync(row) -> bool:
    """A function or method call whose last name (``torch.nonzero`` -> ``nonzero``) syncs."""
    return (row["op"] in ("call_function", "call_method")
            and str(row["target"]).rsplit(".", 1)[-1] in _HOST_SYNC_OPS)


def _is_16bit_output(row) -> bool:
    """``output_shapes`` (e.g. ``'[5, 64] bfloat16'``) names a 16-bit float dtype."""
    return bool(re.search(r"\bb?float16\b", str(row.get("output_shapes", ""))))


#: Ops known to be slow on a device, detectable from the profile alone (node target and output
#: dtype; call arguments are not recorded). Keep it small and documented in docs/advisor.md.
KNOWN_SLOW_OPS = (
    SlowOp("cuda", "ops that synchronise host and device", _is_host_sync,
           "each call (.item(), .tolist(), .cpu(), nonzero, masked_select, unique, ...) makes "
           "the CPU wait for all queued GPU work, so launches stop overlapping kernels",
           "keep values on the device and shapes static; move these ops out of the forward "
           "pass or after the last kernel"),
    SlowOp("cpu", "16-bit floating point on CPU", _is_16bit_output,
           "outputs are float16/bfloat16; CPUs without native 16-bit arithmetic (AVX512-FP16/"
           "BF16, AMX) convert to float32 and back, often running slower than float32",
           "run CPU inference in float32 (model.float()), or check with pyfxprof diff that "
           "16-bit is faster on this CPU"),
)


@register_rule("known_slow_ops")
def known_slow_ops(profile, context: Context) -> list[Suggestion]:
    """Nodes matching a KNOWN_SLOW_OPS entry of the device in use; one suggestion per entry."""
    stats = context.stats
    found = []
    records = None
    for entry in KNOWN_SLOW_OPS:
        if entry.device != context.device:
            continue
        columns = [c for c in ("op", "target", "output_shapes") if c in stats]
        records = stats[columns].to_dict("index") if records is None else records
        rows = _by_median(stats, [row for row, node in records.items() if entry.matches(node)])
        if not rows:
            continue
        pct = context.pct(stats["median"][rows].sum())
        found.append(Suggestion(
            "known_slow_ops", "medium" if pct >= MIN_NODE_PCT else "low",
            f"{plural(len(rows), 'node')}: {entry.label}",
            [entry.why] + context.cite_many(rows), entry.action, None, context.names(rows)))
    return found


# --- latency rules (docs/latency.md) -------------------------------------------------------------

MIN_PREEMPTED_SHARE = 0.05   # machine noise: at least this share of the runs preempted,
TAIL_QUANTILE = 0.9          # and the runs at or above this quantile mostly preempted
MIN_TAIL_PREEMPTED = 0.5     # (this share of them) or preempted runs this much slower:
MIN_PREEMPTED_SLOWDOWN = 0.05
MAX_FIRST_CALL_NODES = 3     # warm-up advice cites this many nodes with first-call costs


@register_rule("machine_noise")
def machine_noise(profile, context: Context) -> list[Suggestion]:
    """Runs preempted (involuntary context switches of the profiling thread) that make up the
    slow tail or are clearly slower: the noise is the machine, not the model."""
    noise = profile.noise()
    if noise is None or profile.n_runs < 2:
        return []
    preempted = noise["preempted"].to_numpy()
    count = int(preempted.sum())
    if count == 0 or count < MIN_PREEMPTED_SHARE * profile.n_runs:
        return []
    totals = profile.run_totals
    tail = totals >= np.quantile(totals, TAIL_QUANTILE)
    tail_share = float(preempted[tail].mean())
    clean = float(np.median(totals[~preempted])) if (~preempted).any() else float("nan")
    slowdown = float(np.median(totals[preempted])) / clean - 1 if clean > 0 else float("nan")
    if not (tail_share >= MIN_TAIL_PREEMPTED or slowdown >= MIN_PREEMPTED_SLOWDOWN):
        return []
    threads, cores = profile.meta.get("threads", "?"), profile.meta.get("cores", "?")
    evidence = [
        f"{count} of {profile.n_runs} runs preempted (the profiling thread was switched out "
        "involuntarily: another task took its CPU)",
        f"{int(preempted[tail].sum())} of the {int(tail.sum())} runs at or above "
        f"p{TAIL_QUANTILE * 100:g} were preempted",
        _slowdown_line(totals[preempted], clean, slowdown)
        + f"; median time off the CPU {format_ns(noise['stolen_ns'][preempted].median())}",
        f"{threads} torch threads on {cores} logical cores"]
    return [Suggestion(
        "machine_noise", "medium" if tail_share >= MIN_TAIL_PREEMPTED else "low",
        "the slow runs are the machine's noise, not the model's", evidence,
        "quote statistics without the preempted runs (prof.without_preempted(), "
        "--exclude-preempted); for clean numbers stop other load, pin the process "
        "(taskset -c) and use fewer torch threads than free cores (--threads)",
        None)]


def _slowdown_line(preempted_totals: np.ndarray, clean: float, slowdown: float) -> str:
    median = format_ns(np.median(preempted_totals))
    if not clean > 0:
        return f"every run was preempted (median {median}): no quiet run to compare with"
    return (f"preempted runs: median {median} against {format_ns(clean)} for the others "
            f"({format_pct(100 * slowdown)} slower)")


@register_rule("warmup_too_small")
def warmup_too_small(profile, context: Context) -> list[Suggestion]:
    """The first timed runs are still slower than the rest (warmup.warmup_report): the
    statistics include start-up costs; suggests the warm-up this model needs."""
    report = profile.warmup()
    if report.runs == 0:
        return []
    warmup = "?" if report.warmup is None else report.warmup
    evidence = [f"the first {plural(report.runs, 'timed run')} (after {warmup} warm-up runs) "
                f"are slower than the steady {format_ns(report.steady_ns)}, together by "
                f"{format_ns(report.excess_ns)}"]
    first_calls = profile.node_warmup().head(MAX_FIRST_CALL_NODES)
    evidence += [f"{row.name}: {format_ns(row.warmup_ns)} in its first runs, steady "
                 f"{format_ns(row.steady_ns)} ({plural(row.warmup_runs, 'slow run')})"
                 for row in first_calls.itertuples()]
    needed = report.needed if report.needed is not None else report.runs
    share = report.excess_ns / max(float(profile.run_totals.sum()), 1.0) * 100
    return [Suggestion(
        "warmup_too_small", "medium" if share >= MIN_NODE_PCT else "low",
        f"warm-up too short: {plural(report.runs, 'timed run')} still warming up", evidence,
        f"profile with warmup >= {needed} (pyfxprof.profile(..., warmup={needed}) or "
        f"--warmup {needed}); the first calls pay one-off costs (lazy initialisation, "
        "allocator growth, caches)", None, first_calls["name"].tolist())]

from . import roofline_rules  # noqa: E402,F401  (registers the roofline rules after these)
