"""Advisor rule for the Python outside the graph: a large share of the user's call spent in
module calls and glue that no op covers (data.outside_graph), with the functions that spend it."""

from __future__ import annotations

from ..data.outside_graph import (SHOWN_FUNCTIONS, call_figure, call_share, function_label,
                                  python_functions)
from ..data.units import format_ns, format_pct
from ..data.advice import Suggestion
from .advice import Context, register_rule

#: The rule speaks from this share of the user's call on (percent); "high" from HIGH_SHARE.
OUTSIDE_SHARE = 10.0
HIGH_SHARE = 30.0


@register_rule("python_outside_graph")
def python_outside_graph(profile, context: Context) -> list[Suggestion]:
    """The `(Python outside the graph)` row from OUTSIDE_SHARE% of the user's call on."""
    share = call_share(profile)
    call = profile.meta.get("call")
    figures = ("median_ns", "graph_median_ns", "outside_median_ns")
    if share is None or 100.0 * share < OUTSIDE_SHARE or any(
            call_figure(call, key) is None for key in figures):
        return []
    functions = python_functions(profile, top=SHOWN_FUNCTIONS).to_dict("records")
    evidence = [f"{format_pct(100.0 * share)} of the call is Python outside the ops: "
                f"{format_ns(call['outside_median_ns'])} of your call's "
                f"{format_ns(call['median_ns'])} (the graph's run: "
                f"{format_ns(call['graph_median_ns'])}, timed interleaved with it)"]
    evidence += [f"{function_label(row)} at {row['file_line'] or 'C'}: {format_ns(row['self_ns'])}"
                 f", {format_pct(100.0 * row['self_ns'] / call['median_ns'])} of the call"
                 for row in functions]
    return [Suggestion(
        "python_outside_graph", "high" if 100.0 * share >= HIGH_SHARE else "medium",
        f"{format_pct(100.0 * share)} of the call is Python outside the ops", evidence,
        "compile it (torch.compile runs the graph without the module calls and glue; on a GPU "
        "mode='reduce-overhead' adds CUDA graphs), or batch more work per call, or trim the "
        "functions above (mask building, output wrappers, config checks)",
        None, ["(Python outside the graph)"])]
