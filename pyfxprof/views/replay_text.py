"""A ReplayResult (Profile.replay) as text and HTML: the isolated warm and cold medians beside
the in-graph median with their ratios, which one the row matches, and the variants' verdicts."""

from __future__ import annotations

import html
import math

from ..data.replay_result import ReplayResult, ShapeRow, VariantRow
from ..data.units import format_ns

#: What each verdict code says in the variants table.
VERDICT_WORDS = {"+": "slower", "-": "faster", "=": "same", "?": "unresolved"}
#: What the in-graph time matching each isolated time means.
MATCH_WORDS = {"warm": "in the graph this node costs what it costs warm: its inputs and "
                       "weights are in cache",
               "cold": "in the graph this node costs what it costs cold: its inputs come "
                       "from memory"}


#: In-graph over isolated time beyond which (either way) the nearest isolated time is only the
#: nearest, not a match.
MATCH_BAND = 1.25


def _match_line(result: ReplayResult) -> str:
    """Which isolated time the in-graph time matches, or that it is only the nearer one."""
    ratio = result.ratio(result.matches)
    if 1 / MATCH_BAND <= ratio <= MATCH_BAND:
        return f"matches {result.matches}: {MATCH_WORDS[result.matches]}"
    return (f"nearest {result.matches}, yet in the graph it costs {ratio:.2f}x that: neither "
            f"the warm nor the cold replay explains the row (allocation, neighbours, threads)")


def _ratio_text(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{value:.2f}x"


def _pct(value: float) -> str:
    return "-" if not math.isfinite(value) else f"{100 * value:+.1f}%"


def _variant_line(row: VariantRow) -> str:
    if row.error:
        return f"  {row.name:<16} could not run: {row.error}"
    error = ("" if not math.isfinite(row.max_abs_error) else
             f"  max abs err {row.max_abs_error:.2e}, rel {row.max_rel_error:.2e}"
             + ("  BEYOND its dtype's tolerance" if row.beyond_tolerance else ""))
    return (f"  {row.name:<16} {format_ns(row.median_ns):>10}  {_pct(row.change):>8} "
            f"[{_pct(row.low)}, {_pct(row.high)}]  {VERDICT_WORDS.get(row.verdict, '?'):<10}"
            f"{error}")


def _shape_lines(shapes: tuple[ShapeRow, ...]) -> list[str]:
    """A line per recorded shape: its nodes, in-graph and isolated medians."""
    lines = [f"{len(shapes)} recorded shapes (a replay each):"]
    for row in shapes:
        alone = row.warm_ns if math.isfinite(row.warm_ns) else row.cold_ns
        nodes = ", ".join(row.nodes[:3]) + (f" +{len(row.nodes) - 3}" if len(row.nodes) > 3
                                             else "")
        lines.append(f"  {row.input_shapes}  [{nodes}]  in graph "
                     f"{format_ns(row.in_graph_ns)}, warm {format_ns(row.warm_ns)}"
                     + (f", cold {format_ns(row.cold_ns)}" if math.isfinite(row.cold_ns)
                        else "")
                     + f"  in graph / alone {_ratio_text(row.in_graph_ns / alone if alone > 0 else math.nan)}")
    return lines


def replay_table(result: ReplayResult) -> str:
    """The replay as text.

    >>> r = ReplayResult("bn1", "call_module", "bn1", "([1, 64, 48, 48] float32)",
    ...                  warm_ns=20_000.0, cold_ns=40_000.0, in_graph_ns=38_000.0)
    >>> print(replay_table(r))  # doctest: +NORMALIZE_WHITESPACE
    replay of bn1 (call_module bn1) on ([1, 64, 48, 48] float32)
      in graph   38.0 µs
      warm       20.0 µs  in graph / warm 1.90x
      cold       40.0 µs  in graph / cold 0.95x
    matches cold: in the graph this node costs what it costs cold: its inputs come from memory
    """
    lines = [f"replay of {result.node} ({result.op} {result.target}) on {result.input_shapes}",
             f"  in graph {format_ns(result.in_graph_ns):>10}"]
    for cache, alone in (("warm", result.warm_ns), ("cold", result.cold_ns)):
        if math.isfinite(alone):
            lines.append(f"  {cache:<8} {format_ns(alone):>10}  in graph / {cache} "
                         f"{_ratio_text(result.ratio(cache))}")
    if result.matches:
        lines.append(_match_line(result))
    if result.fresh_inputs:
        lines.append("in place: it writes to its inputs, so each timed call ran on a fresh "
                     "copy of them (the copying not timed)")
    if result.shapes:
        lines.extend(_shape_lines(result.shapes))
    if result.variants:
        lines.append("variants against the as-is replay" + (" of the first shape" if
                     result.shapes else "") + " (interleaved blocks; change [interval], "
                     "verdict):")
        lines.extend(_variant_line(row) for row in result.variants)
    return "\n".join(lines)


def replay_html(result: ReplayResult) -> str:
    """The replay's text in a notebook cell.

    >>> replay_html(ReplayResult("n", "call_function", "torch.relu", "")).startswith("<pre>")
    True
    """
    return f"<pre>{html.escape(replay_table(result))}</pre>"
