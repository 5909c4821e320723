"""What the advisor works with: the Context a rule receives and the registry of rules
(``@register_rule``); Suggestion and Advice, plain data, are data/advice.py's. The rules are in
advisor_rules, ``advise`` in advisor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Hashable

import pandas as pd

from ..stats.node_statistics import summary_of_totals
from ..data.advice import Suggestion
from ..data.replay_result import REPLAYED_OPS
from ..data.units import format_ns, format_pct
from ..errors import ArgumentError

MAX_EVIDENCE_NODES = 8     # node lines cited per suggestion before "... and N more"


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

    def cell(self, row: Hashable, column: str) -> Any:
        """Node ``row``'s value in ``column``, of that column's type (docs/profile.md), which
        pandas' types cannot tell (they type a cell as any scalar)."""
        return self.stats.at[row, column]

    def ns(self, row: Hashable, column: str = "median") -> float:
        """Node ``row``'s time in ``column`` (median, iqr, backward_median...), in ns."""
        return float(self.cell(row, column))

    def cite(self, row: int, column: str = "median") -> str:
        """``name (what) median T, P%`` for node ``row`` (``column`` may be device_median)."""
        ns = self.cell(row, column)
        name, kind = str(self.cell(row, "name")), what(self.stats.loc[row])
        glue = name.startswith("(") and kind.startswith(name.strip("()"))  # e.g. outside the graph
        label = kind if glue else f"{name} ({kind})"
        return f"{label} {column.replace('_', ' ')} {format_ns(ns)}, {format_pct(self.pct(ns))}"

    def cite_many(self, rows, line=None) -> list[str]:
        """``line(row)`` (default ``cite``) for the first MAX_EVIDENCE_NODES ``rows``, then
        "... and N more"."""
        rows, line = list(rows), line or self.cite
        extra = len(rows) - MAX_EVIDENCE_NODES
        return [line(row) for row in rows[:MAX_EVIDENCE_NODES]] + (
            [f"... and {extra} more"] if extra > 0 else [])

    def names(self, rows) -> list[str]:
        """Node names of ``rows``."""
        return self.stats.loc[list(rows), "name"].astype(str).tolist()

    def replay_try(self, row: Hashable, variants: list[str], cache: str = "",
                   why: str = "measure it on one") -> str:
        """How to measure a suggestion on node ``row`` alone: ``; <why>:
        prof.replay('name', variants=[...])`` (docs/replay.md), or "" for a row a replay does
        not rebuild (a compiled kernel, the Python outside the graph).

        Example: ``context.replay_try(3, ["compile"])`` ->
        ``"; measure it on one: prof.replay('add', variants=['compile']) (docs/replay.md)"``
        """
        if self.cell(row, "op") not in REPLAYED_OPS:
            return ""
        options = (f", variants={variants!r}" if variants else "") + (
            f", cache={cache!r}" if cache else "")
        return (f"; {why}: prof.replay({str(self.cell(row, 'name'))!r}{options}) "
                "(docs/replay.md)")


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


def register_rule(name: str) -> Callable[[Callable], Callable]:
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
            raise ArgumentError(f"advisor rule {name!r} is already registered; choose another name "
                             f"or call unregister_rule({name!r}) first")
        RULES[name] = rule
        return rule
    return decorator


def unregister_rule(name: str) -> None:
    """Remove rule ``name`` from the registry (see the example of register_rule)."""
    if name not in RULES:
        raise ArgumentError(f"no advisor rule {name!r}; registered: {', '.join(RULES)}")
    del RULES[name]


# --- helpers shared by the rules ---------------------------------------------------------------


def what(row) -> str:
    """Module type for a module call, else the target (e.g. ``torch.relu``)."""
    return str(row["module_type"] if row["op"] == "call_module" else row["target"])
