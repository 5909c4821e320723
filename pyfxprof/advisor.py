"""Optimisation advice drawn from a Profile: rules that read the timings and propose changes.

A rule is a function ``rule(profile, context) -> list[Suggestion]`` registered under a name
with ``@register_rule("name")``. ``advise`` runs the rules and sorts what they found by
severity, then by expected saving. Every suggestion cites the nodes and times it rests on;
percentages are shares of the median end-to-end run. See docs/advisor.md.
Example: ``print(advise(prof))``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from .stats import noisy_mask, relative_iqr, summary_of_totals
from .units import format_ns, format_pct

__all__ = ["Advice", "Context", "KNOWN_SLOW_OPS", "RULES", "SEVERITIES", "SlowOp", "Suggestion",
           "advise", "build_context", "fusible_pairs", "register_rule", "unregister_rule"]

#: Severities, most urgent first; advice is sorted in this order.
SEVERITIES = ("high", "medium", "low", "info")
MAX_EVIDENCE_NODES = 8     # node lines cited per suggestion before "... and N more"
TINY_NS = 10_000           # a node faster than this is mostly per-op dispatch overhead
MIN_TINY_NODES = 10        # overhead-bound needs at least this many tiny nodes,
TINY_NODE_SHARE = 0.5      # making up at least this share of the nodes
TINY_TIME_PCT = 25.0       # and of the median run (percent)
ESTIMATE_FRACTION = 0.5    # overhead-bound savings: assume half of the overhead goes away
HOTSPOT_SHARE = 0.8        # hotspots: smallest set of nodes with this share of node time
LOW_FLOPS_RATIO = 0.10     # low FLOP/s: below this fraction of the model's best node
MIN_NODE_PCT = 1.0         # nodes below this share of the run are not worth a suggestion


@dataclass
class Suggestion:
    """One piece of advice: what to change, why (evidence) and what it may save.

    ``severity`` is one of SEVERITIES; ``evidence`` lines cite node names and times;
    ``expected_saving_ns`` is None when the rule cannot estimate it; ``nodes`` names the nodes.

    Example:
        >>> Suggestion("mine", "low", "Try X", ["relu_3 1.20 ms"], "do X", 600.0).nodes
        []
    """

    rule: str
    severity: str
    title: str
    evidence: list[str]
    action: str
    expected_saving_ns: float | None = None
    nodes: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")


class Advice(list):
    """Suggestions, most urgent first; ``str()`` is a numbered report. ``total_ns`` is the
    median end-to-end run the percentages refer to; ``subject`` names the model and device.

    Example:
        >>> advice = Advice([Suggestion("r", "info", "Look here", ["a: 5 µs"], "read it")],
        ...                 total_ns=10_000.0, subject="net on cpu")
        >>> print(advice)
        Advice for net on cpu: 1 suggestion (median run 10.0 µs; percentages are shares of it)
        <BLANKLINE>
        1. [info] Look here  (rule: r)
           evidence:
             - a: 5 µs
           action: read it
           expected saving: not estimated
    """

    def __init__(self, suggestions=(), total_ns: float = math.nan, subject: str = "the model"):
        super().__init__(suggestions)
        self.total_ns = total_ns
        self.subject = subject

    def __str__(self) -> str:
        lines = [f"Advice for {self.subject}: {_plural(len(self), 'suggestion')} (median run "
                 f"{format_ns(self.total_ns)}; percentages are shares of it)"]
        for number, item in enumerate(self, 1):
            lines += ["", f"{number}. [{item.severity}] {item.title}  (rule: {item.rule})",
                      "   evidence:"]
            lines += [f"     - {line}" for line in item.evidence]
            lines += [f"   action: {item.action}", f"   expected saving: {self._saving(item)}"]
        return "\n".join(lines)

    def _saving(self, item: Suggestion) -> str:
        if item.expected_saving_ns is None:
            return "not estimated"
        pct = item.expected_saving_ns / self.total_ns * 100 if self.total_ns > 0 else math.nan
        return f"{format_ns(item.expected_saving_ns)} ({format_pct(pct)})"


@dataclass(frozen=True)
class Context:
    """Data computed once per ``advise`` call and shared by the rules.

    ``stats`` is ``profile.to_dataframe()`` (identity, host statistics in ns, ``device_*``
    statistics with device samples, extra columns such as ``inputs`` and ``flops``);
    ``total_ns`` the median end-to-end run (sum of node medians if run totals are 0);
    ``device`` the device kind ("cpu", "cuda").
    Example: ``build_context(prof).cite(0)`` -> ``'conv1 (Conv2d) median 1.20 ms, 4.4%'``
    """

    stats: pd.DataFrame
    total_ns: float
    device: str

    def pct(self, ns: float) -> float:
        """``ns`` as a percentage of the median run (NaN when the run took no time)."""
        return float(ns) / self.total_ns * 100 if self.total_ns > 0 else math.nan

    def cite(self, row: int, column: str = "median") -> str:
        """``name (what) median T, P%`` for node ``row`` (``column`` may be device_median)."""
        ns = self.stats.at[row, column]
        return (f"{self.stats.at[row, 'name']} ({_what(self.stats.loc[row])}) "
                f"{column.replace('_', ' ')} {format_ns(ns)}, {format_pct(self.pct(ns))}")

    def cite_many(self, rows, line=None) -> list[str]:
        """``line(row)`` (default ``cite``) for the first MAX_EVIDENCE_NODES ``rows``, then
        "... and N more"."""
        rows, line = list(rows), line or self.cite
        extra = len(rows) - MAX_EVIDENCE_NODES
        return [line(row) for row in rows[:MAX_EVIDENCE_NODES]] + (
            [f"... and {extra} more"] if extra > 0 else [])

    def names(self, rows) -> list[str]:
        """Node names of ``rows``."""
        return [str(self.stats.at[row, "name"]) for row in rows]


def build_context(profile) -> Context:
    """The Context of ``profile`` that every rule receives.

    Example: ``build_context(prof).device`` -> ``'cpu'``
    """
    stats = profile.to_dataframe()
    total = summary_of_totals(profile.run_totals)["median"]
    if not total > 0:
        total = float(stats["median"].sum())
    default = "cuda" if profile.device_samples is not None else "cpu"
    device = str(profile.meta.get("device") or default).split(":")[0]
    return Context(stats=stats, total_ns=float(total), device=device)


# --- registry ----------------------------------------------------------------------------------

#: Registered rules ``rule(profile, context) -> list[Suggestion]`` by name, in registration
#: order (the order ``advise`` runs them).
RULES: dict[str, Callable] = {}


def register_rule(name: str):
    """Decorator registering ``rule(profile, context) -> list[Suggestion]`` under ``name``.

    Example:
        >>> @register_rule("relus")
        ... def relus(profile, context):
        ...     rows = context.stats.index[context.stats["target"] == "torch.relu"]
        ...     return [Suggestion("relus", "info", "ReLUs", context.cite_many(rows), "fuse")]
        >>> unregister_rule("relus")
    """
    def decorator(rule: Callable) -> Callable:
        if name in RULES:
            raise ValueError(f"advisor rule {name!r} is already registered; choose another name "
                             f"or call unregister_rule({name!r}) first")
        RULES[name] = rule
        return rule
    return decorator


def unregister_rule(name: str) -> None:
    """Remove rule ``name`` from the registry (see the example of register_rule)."""
    if name not in RULES:
        raise ValueError(f"no advisor rule {name!r}; registered: {', '.join(RULES)}")
    del RULES[name]


def advise(profile, rules=None) -> Advice:
    """Run the advisor ``rules`` (names; default all registered) on ``profile``.

    Returns an Advice sorted by severity (high, medium, low, info), then by expected saving
    (largest first; unestimated last), then rule order.

    Example:
        >>> print(advise(pyfxprof.profile(model, (x,), runs=30)))   # doctest: +SKIP
        >>> advise(prof, rules=["hotspots"])[0].nodes               # doctest: +SKIP
        ['layer4_0_conv2', 'layer4_1_conv1', ...]
    """
    names = list(RULES) if rules is None else [rules] if isinstance(rules, str) else list(rules)
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise ValueError(f"unknown advisor rules {unknown}; registered: {', '.join(RULES)}")
    subject = f"{profile.meta.get('model', 'the model')} on {profile.meta.get('device', '?')}"
    if profile.n_runs == 0 or profile.n_nodes == 0:
        return Advice([], math.nan, subject)
    context = build_context(profile)
    found = []
    for name in names:
        for item in RULES[name](profile, context):
            if not isinstance(item, Suggestion):
                raise TypeError(f"advisor rule {name!r} returned a {type(item).__name__}; "
                                "rules must return a list of Suggestion")
            found.append(item)
    found.sort(key=lambda s: (SEVERITIES.index(s.severity), -(s.expected_saving_ns or 0.0)))
    return Advice(found, context.total_ns, subject)


# --- helpers shared by the rules ---------------------------------------------------------------
def _what(row) -> str:
    """Module type for a module call, else the target (e.g. ``torch.relu``)."""
    return str(row["module_type"] if row["op"] == "call_module" else row["target"])


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _severity(pct: float) -> str:
    """Severity of a saving worth ``pct`` percent of the run."""
    return "high" if pct >= 5 else "medium" if pct >= MIN_NODE_PCT else "low"


def _as_names(value) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else ()


def _by_median(stats: pd.DataFrame, rows, column: str = "median") -> list[int]:
    """``rows`` sorted by ``column`` (a median), largest first; ties keep execution order."""
    return sorted(rows, key=lambda row: -stats.at[row, column])


# --- rules -------------------------------------------------------------------------------------

#: The BatchNorm type that folds into each conv/linear type (as in pyfxprof.fusion).
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
    calls = modules["target"].value_counts()
    pairs = []
    for row, conv in modules.iterrows():
        users = readers.get(conv["name"], [])
        bn_type = _BN_AFTER.get(conv["module_type"])
        if bn_type is None or calls[conv["target"]] > 1 or len(users) != 1:
            continue
        bn = stats.loc[users[0]]
        if (bn["op"] == "call_module" and bn["module_type"] == bn_type
                and _as_names(bn["inputs"]) == (conv["name"],)):
            pairs.append((row, users[0]))
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
    evidence = [f"{_plural(len(pairs), 'Conv→BatchNorm pair')}: {format_ns(pair_ns)} "
                f"({format_pct(context.pct(pair_ns))}) in total, of which the BatchNorms "
                f"{format_ns(bn_ns)} ({format_pct(context.pct(bn_ns))})"]
    evidence += context.cite_many(pairs, lambda pair: (
        f"{stats.at[pair[0], 'name']} → {stats.at[pair[1], 'name']}: BatchNorm "
        f"{format_ns(median[pair[1]])} ({format_pct(context.pct(median[pair[1]]))}), "
        f"{stats.at[pair[0], 'module_type']} {format_ns(median[pair[0]])}"))
    return [Suggestion(
        "fusible_conv_bn", _severity(context.pct(bn_ns)),
        f"Fold {_plural(len(pairs), 'eval-mode BatchNorm')} into the preceding "
        "convolution/linear", evidence,
        "pyfxprof.fuse_conv_bn(model) / pyfxprof fuse MODEL --bench (inference only; the "
        "fusion report lists every pair it folds or skips and why)",
        bn_ns, [name for pair in pairs for name in context.names(pair)])]


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
        "more work (larger batches)", ESTIMATE_FRACTION * tiny_ns, context.names(tiny))]


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
        f"{stats.at[row, 'name']} ({_what(stats.loc[row])}): host {format_ns(host[row])}, "
        f"device {format_ns(device[row])}"))
    severity = "high" if host_ns >= 2 * device_ns else "medium"
    return [Suggestion(
        "overhead_bound", severity, "Launch-bound: host time above device time", evidence,
        "capture the model in CUDA graphs (torch.compile(model, mode='reduce-overhead') or "
        "torch.cuda.CUDAGraph), or torch.compile to fuse kernels; larger batches amortise "
        "launches", ESTIMATE_FRACTION * (host_ns - device_ns), context.names(bound))]


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
    kinds = stats.loc[rows].apply(_what, axis=1)
    by_kind = stats[column][rows].groupby(kinds.to_numpy()).agg(["size", "sum"])
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
        "lists them", None, context.names(rows))]


def _format_rate(flops_per_s: float) -> str:
    scale, prefix = next((u for u in ((1e12, "T"), (1e9, "G"), (1e6, "M")) if flops_per_s >= u[0]),
                         (1.0, ""))
    return f"{flops_per_s / scale:.3g} {prefix}FLOP/s"


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
    best = rate.idxmax()
    slow = [row for row in rated if rate[row] < LOW_FLOPS_RATIO * rate[best]
            and context.pct(median[row]) >= MIN_NODE_PCT]
    if not slow:
        return []
    slow = _by_median(stats, slow)
    slow_ns = float(median[slow].sum())
    evidence = [f"best: {stats.at[best, 'name']} ({_what(stats.loc[best])}) at "
                f"{_format_rate(rate[best])}",
                f"{len(slow)} nodes worth >= {MIN_NODE_PCT:g}% each run below "
                f"{LOW_FLOPS_RATIO:.0%} of that, together {format_ns(slow_ns)} "
                f"({format_pct(context.pct(slow_ns))}):"]
    evidence += context.cite_many(slow, lambda row: (
        f"{context.cite(row)}: {_format_rate(rate[row])} ({rate[row] / rate[best]:.1%} of best)"))
    return [Suggestion(
        "low_flops", "medium" if context.pct(slow_ns) >= 10 else "low",
        f"{_plural(len(slow), 'node')} with low achieved FLOP/s (likely memory-bound)", evidence,
        "they move more bytes than they compute: fuse them with their neighbours "
        "(torch.compile), try channels_last memory format, or a lower-precision dtype",
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
        rows, lambda row: f"{context.cite(row)}: IQR {format_ns(stats.at[row, 'iqr'])} = "
                          f"{rel[row]:.0%} of the median")
    return [Suggestion(
        "noisy", "low", _plural(len(rows), "noisy measurement"), evidence,
        f"re-run with more runs (--runs {max(2 * runs, 50)}), pin threads (--threads N and "
        "taskset -c 0-<N-1>) on a quiet machine; treat differences smaller than the IQR as "
        "noise", None, context.names(rows))]


@dataclass(frozen=True)
class SlowOp:
    """An entry of KNOWN_SLOW_OPS: nodes on ``device`` for which ``matches(row)`` is true."""

    device: str                            # "cpu" or "cuda"
    label: str                             # short name, in the suggestion's title
    matches: Callable[[pd.Series], bool]   # row of Context.stats -> is it this op?
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
    for entry in KNOWN_SLOW_OPS:
        if entry.device != context.device:
            continue
        rows = _by_median(stats, [row for row, node in stats.iterrows() if entry.matches(node)])
        if not rows:
            continue
        pct = context.pct(stats["median"][rows].sum())
        found.append(Suggestion(
            "known_slow_ops", "medium" if pct >= MIN_NODE_PCT else "low",
            f"{_plural(len(rows), 'node')}: {entry.label}",
            [entry.why] + context.cite_many(rows), entry.action, None, context.names(rows)))
    return found
