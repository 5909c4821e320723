"""Advisor rules for compiled profiles (one row per Inductor kernel): the kernels that dominate
and what kind they are (generated, extern library call, aten fallback), and the time spent
outside every kernel (guards, wrapper Python, eager code between graphs)."""

from __future__ import annotations

from ..data.units import format_pct
from ..data.advice import Suggestion
from .advice import Context, register_rule
from .compiled_diff import is_compiled_profile

#: A kernel with at least this share of the run is cited by `compiled_kernels`.
KERNEL_SHARE = 20.0
#: Time outside kernels from this share of the run on is cited by `compiled_outside`.
OUTSIDE_SHARE = 30.0
#: What each kernel kind is, for the evidence lines.
KINDS = {"fused_kernel": "a kernel Inductor generated (fused)",
         "extern_kernel": "an extern library call Inductor did not generate",
         "fallback_op": "an aten fallback Inductor could not lower",
         "compiled_graph": "a whole compiled graph"}


def _modules(row) -> str:
    names = list(dict.fromkeys("(root)" if m == "" else m for m in row["source_modules"] or ()))
    return ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "") or "unknown"


@register_rule("compiled_kernels")
def compiled_kernels(profile, context: Context) -> list[Suggestion]:
    """Kernels of a compiled profile each taking KERNEL_SHARE% of the run or more."""
    if not is_compiled_profile(profile):
        return []
    stats = context.stats
    rows = [row for row in stats.index if context.cell(row, "op") in KINDS
            and context.pct(context.ns(row)) >= KERNEL_SHARE]
    if not rows:
        return []
    evidence = [f"{context.cell(row, 'name')} covers {format_pct(context.pct(context.ns(row)))}"
                f" of the time; it is {KINDS[context.cell(row, 'op')]} "
                f"({', '.join(context.cell(row, 'aten_ops')[:3]) or '?'}) "
                f"from {_modules(stats.loc[row])}"
                for row in rows]
    extern = any(context.cell(row, "op") in ("extern_kernel", "fallback_op") for row in rows)
    action = ("extern calls run a library kernel as in eager mode: compile with "
              "mode='max-autotune' to let Inductor benchmark generated alternatives, or change "
              "the shapes/layout of that module" if extern else
              "look at the fused kernel's source nodes (prof.nodes['source_nodes']) and lines")
    return [Suggestion("compiled_kernels", "medium", f"{len(rows)} kernel(s) dominate the "
                       "compiled model", evidence, action, None, context.names(rows))]


@register_rule("compiled_outside")
def compiled_outside(profile, context: Context) -> list[Suggestion]:
    """Time outside every kernel of a compiled profile from OUTSIDE_SHARE% of the run on."""
    if not is_compiled_profile(profile):
        return []
    stats = context.stats
    rows = [row for row in stats.index if context.cell(row, "op") == "outside_kernels"]
    if not rows or context.pct(context.ns(rows[0])) < OUTSIDE_SHARE:
        return []
    return [Suggestion(
        "compiled_outside", "medium", "the compiled model spends its time outside kernels",
        [context.cite(rows[0]), f"{len(stats) - 1} kernel calls share the rest"],
        "Dynamo's guard check, the wrapper's Python and allocations dominate: larger batches "
        "amortise them; on a GPU mode='reduce-overhead' (CUDA graphs) removes most of them",
        None, context.names(rows))]
