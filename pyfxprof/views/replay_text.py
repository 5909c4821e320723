"""A ReplayResult (Profile.replay) as text and HTML: the isolated warm and cold medians beside
the in-graph median with their ratios, which one the row matches, and the variants' verdicts."""

from __future__ import annotations

import html
import math

from ..data.replay_result import ReplayResult, ShapeRow, VariantRow
from ..data.units import format_ns, plural

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


def _shapes_title(result: ReplayResult) -> str:
    count = len(result.shapes)
    if result.recorded_shapes:
        return f"{count} of {result.recorded_shapes} recorded shapes, evenly spread (a replay each)"
    return f"{count} recorded shapes (a replay each)"


def _in_graph_of(row: ShapeRow) -> str:
    """Whose in-graph median a shape's row shows: its calls', or the node's over all its
    calls where the calls could not be matched to shapes."""
    if not row.own_in_graph:
        return " (the node's over all its calls: its calls were not matched to shapes)"
    return f" ({plural(row.calls, 'call')})" if row.calls else ""


def _shape_lines(result: ReplayResult) -> list[str]:
    """A line per recorded shape: its nodes, in-graph and isolated medians."""
    lines = [_shapes_title(result) + ":"]
    for row in result.shapes:
        alone = row.warm_ns if math.isfinite(row.warm_ns) else row.cold_ns
        ratio = row.in_graph_ns / alone if alone > 0 else math.nan
        nodes = ", ".join(row.nodes[:3]) + (f" +{len(row.nodes) - 3}" if len(row.nodes) > 3
                                             else "")
        lines.append(f"  {row.input_shapes}  [{nodes}]  in graph "
                     f"{format_ns(row.in_graph_ns)}{_in_graph_of(row)}, warm "
                     f"{format_ns(row.warm_ns)}"
                     + (f", cold {format_ns(row.cold_ns)}" if math.isfinite(row.cold_ns)
                        else "")
                     + f"  in graph / alone {_ratio_text(ratio)}")
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
        lines.extend(_shape_lines(result))
    if result.variants:
        lines.append("variants against the as-is replay" + (" of the first shape" if
                     result.shapes else "") + " (interleaved blocks; change [interval], "
                     "verdict):")
        lines.extend(_variant_line(row) for row in result.variants)
    return "\n".join(lines)


#: The notebook repr's style: compact, numbers right-aligned, verdicts coloured.
STYLE = ("<style>.pyfxprof-replay table{border-collapse:collapse;margin:4px 0 8px}"
         ".pyfxprof-replay th,.pyfxprof-replay td{padding:2px 10px;text-align:right;"
         "border-bottom:1px solid #ddd;white-space:nowrap}"
         ".pyfxprof-replay th:first-child,.pyfxprof-replay td:first-child{text-align:left}"
         ".pyfxprof-replay .faster{color:#107010}.pyfxprof-replay .slower{color:#b01010}"
         ".pyfxprof-replay .beyond{color:#b01010;font-weight:bold}"
         ".pyfxprof-replay p{margin:4px 0}</style>")


def _html_table(titles: list[str], rows: list) -> str:
    """A table of already escaped cells (a cell may carry markup); a row given as a string
    is a whole ``<tr>`` already."""
    head = "".join(f"<th>{html.escape(t)}</th>" for t in titles)
    body = "".join(row if isinstance(row, str) else
                   "<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _time_rows(result: ReplayResult) -> list[list[str]]:
    rows = [["in graph", format_ns(result.in_graph_ns), ""]]
    for cache, alone in (("warm", result.warm_ns), ("cold", result.cold_ns)):
        if math.isfinite(alone):
            rows.append([cache, format_ns(alone), _ratio_text(result.ratio(cache))])
    return rows


def _variant_html(row: VariantRow) -> list[str] | str:
    name = html.escape(row.name)
    if row.error:  # one cell over the figures' columns, wrapped
        return (f'<tr><td>{name}</td><td colspan="6" class="slower" style="text-align:left;'
                f'white-space:normal">could not run: {html.escape(row.error)}</td></tr>')
    word = VERDICT_WORDS.get(row.verdict, "?")
    error = "" if not math.isfinite(row.max_abs_error) else f"{row.max_rel_error:.2e}"
    flag = ' class="beyond"' if row.beyond_tolerance else ""
    return [name, format_ns(row.median_ns), _pct(row.change),
            f"[{_pct(row.low)}, {_pct(row.high)}]", f'<span class="{word}">{word}</span>',
            "-" if not error else f"{row.max_abs_error:.2e}",
            f"<span{flag}>{error or '-'}{' beyond tolerance' if flag else ''}</span>"]


def replay_html(result: ReplayResult) -> str:
    """The replay in a notebook cell: the times with their ratios, what the row matches, the
    shapes and the variants as tables.

    >>> page = replay_html(ReplayResult("n", "call_function", "torch.relu", "([4] float32)",
    ...                                 warm_ns=1000.0, in_graph_ns=1500.0))
    >>> "<table>" in page and "1.50x" in page
    True
    """
    notes = ([_match_line(result)] if result.matches else []) + (
        ["in place: it writes to its inputs, so each timed call ran on a fresh copy of them "
         "(the copying not timed)"] if result.fresh_inputs else [])
    parts = [STYLE, '<div class="pyfxprof-replay">',
             f"<b>replay of {html.escape(result.node)}</b> ({html.escape(result.op)} "
             f"{html.escape(result.target)}) on <code>{html.escape(result.input_shapes)}</code>",
             _html_table(["", "median", "in graph / replay"], _time_rows(result))]
    parts += [f"<p>{html.escape(note)}</p>" for note in notes]
    if result.shapes:
        parts.append(f"<p>{html.escape(_shapes_title(result))}:</p>")
        parts.append(_html_table(
            ["recorded shape", "nodes", "in graph", "warm", "cold"],
            [[html.escape(r.input_shapes), html.escape(", ".join(r.nodes)),
              format_ns(r.in_graph_ns) + html.escape(_in_graph_of(r)), format_ns(r.warm_ns),
              format_ns(r.cold_ns)] for r in result.shapes]))
    if result.variants:
        parts.append("<p>variants against the as-is replay" + (" of the first shape" if
                     result.shapes else "") + " (interleaved blocks):</p>")
        parts.append(_html_table(["variant", "median", "change", "interval", "verdict",
                                  "max abs err", "max rel err"],
                                 [_variant_html(row) for row in result.variants]))
    return "".join(parts) + "</div>"
