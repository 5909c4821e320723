"""A CompiledDiff (eager vs compiled, per module) as text: the module table, the per-op table
and the repr, served as ``CompiledDiff.table``, ``ops_table`` and ``__repr__`` through the
package root's ``_METHODS`` (views never import analyses at run time); and the cell helpers
analyses/compiled_diff.py's ``kernel_table`` shares.

Example:
    >>> print(pyfxprof.diff(eager_profile, compiled_profile).table(top=10))   # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import pandas as pd

from ..data.units import elide, format_ns, format_pct
from .report_header import numeric_mode_difference

if TYPE_CHECKING:
    from ..data.profile import Profile


class CompiledDiff(Protocol):
    """What these views read of an eager-vs-compiled result (analyses/compiled_diff.py's
    CompiledDiff, whose docstring says what each means): views sit below analyses, so they
    name the shape they render, never the class."""

    eager: Profile
    compiled: Profile
    labels: tuple[str, str]
    frame: pd.DataFrame
    ops: pd.DataFrame

    def totals(self) -> dict: ...


def compiled_table(diff: CompiledDiff, top: int | None = 20) -> str:
    """Per module: eager, compiled, saving; the ops and the kernels that replaced them
    ("*": a kernel shared with other modules, its time split); first, a line when the
    two ran in different numeric modes (autocast, dtypes, memory formats, autograd).

    >>> print(d.table(top=10))   # doctest: +SKIP
    """
    frame = diff.frame if top is None else diff.frame.head(top)
    shown = pd.DataFrame({
        "Module": ["(root)" if m == "" else elide(m, 36) for m in frame["module"]],
        diff.labels[0].capitalize(): frame["eager_ns"].map(format_ns),
        diff.labels[1].capitalize(): frame["compiled_ns"].map(format_ns),
        "Saving": frame["saving_ns"].map(format_ns), "Saving %": frame["saving_pct"].map(
            format_pct),
        "Eager ops": [elide(cell(v, 3), 30) for v in frame["ops"]],
        "Kernels": [elide(cell(k, 2), 46) + ("*" if s else "")
                    for k, s in zip(frame["kernels"], frame["shared"])]})
    t = diff.totals()
    head = (f"{diff.labels[0]} {format_ns(t['eager_ns'])} -> {diff.labels[1]} "
            f"{format_ns(t['compiled_ns'])} (median run totals; saving "
            f"{format_ns(t['saving_ns'])}); per module, * = kernel shared with other "
            "modules, its time split evenly over its source nodes")
    note = numeric_mode_difference(diff.eager.meta, diff.compiled.meta, diff.labels)
    return (note + "\n" if note else "") + head + "\n" + shown.to_string(index=False)


def compiled_ops_table(diff: CompiledDiff, module: str | None = None,
                       top: int | None = 20) -> str:
    """Eager op against source node and kernels, one line each, largest saving first;
    `module`: that module path and the modules inside it only.

    >>> print(d.ops_table("layer1"))  # doctest: +SKIP
    """
    frame = diff.ops
    if module is not None:
        inside = (frame["module"] == module) | frame["module"].str.startswith(module + ".")
        frame = frame[inside | (module == "")]
    frame = frame.sort_values("saving_ns", ascending=False, kind="stable")
    frame = frame if top is None else frame.head(top)
    shown = pd.DataFrame({
        "Module": ["(root)" if m == "" else elide(m, 32) for m in frame["module"]],
        "Eager op": [elide(s, 24) or "-" for s in frame["eager_op"]],
        diff.labels[0].capitalize(): frame["eager_ns"].map(format_ns),
        "Source node": [elide(s, 24) or "-" for s in frame["source_node"]],
        diff.labels[1].capitalize(): frame["compiled_ns"].map(format_ns),
        "Saving": frame["saving_ns"].map(format_ns),
        "Kernels": [elide(cell(k, 2), 50) or "-" for k in frame["kernels"]]})
    return ("per op: the eager op, the source node of the compiled graph it was paired "
            "with in its module, and the kernels covering it (their time split evenly over "
            "their source nodes)\n" + shown.to_string(index=False))


def compiled_repr(diff: CompiledDiff) -> str:
    """``<CompiledDiff 12 modules: 3.10 ms -> 1.20 ms>`` (``<ExportedDiff ...`` for one)."""
    t = diff.totals()
    return (f"<{type(diff).__name__} {len(diff.frame)} modules: {format_ns(t['eager_ns'])} -> "
            f"{format_ns(t['compiled_ns'])}>")


def cell(values: tuple | None, limit: int = 4) -> str:
    """Up to `limit` distinct values of a tuple cell, "(root)" for the empty module path.

    >>> cell(("", "a", "a", "b"), limit=1)
    '(root) +2'
    """
    items = list(dict.fromkeys("(root)" if v == "" else str(v) for v in (values or ())))
    more = f" +{len(items) - limit}" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more
