"""The report's header block: what was measured, on what, how, and how far to trust it."""

from __future__ import annotations

from ..data.outside_graph import call_figure
from ..data.rungs import INDUCTOR
from ..stats.node_statistics import summary_of_totals
from ..data.units import format_flops, format_ns, format_pct, format_si, plural
from ..data.validate import model_nodes
from .latency_text import latency_header


def _meta(meta: dict, key: str) -> str:
    value = meta.get(key)
    return "?" if value is None else str(value)


def _clock_text(clock) -> str:
    if not isinstance(clock, dict) or clock.get("name") is None:
        return "clock ?"
    resolution = clock.get("resolution_ns")
    res_text = "?" if resolution is None else format_ns(resolution)
    return f"clock {clock['name']} (resolution {res_text})"


def profile_header(profile) -> list[str]:
    """A Profile's header block: header_lines of its meta, runs, model nodes and run totals,
    then its latency and warm-up lines (views/latency_text.py).

    >>> profile_header(prof)[0]  # doctest: +SKIP
    'pyfxprof — Net on cpu · 50 runs (10 warmup) · mode codegen · capture fx · eval, no grad'
    """
    return header_lines(profile.meta, profile.n_runs, int(model_nodes(profile.nodes).sum()),
                        profile.run_totals) + latency_header(profile)


def header_lines(meta: dict, n_runs: int, n_nodes: int, run_totals) -> list[str]:
    """The header block: what was measured, how, and how much of it is trustworthy.
    `n_nodes`: the model's own nodes (not ranges, not the time between graphs or outside
    kernels, which have rows of their own).

    >>> lines = header_lines({"overhead_ns": 52.2}, 2, 3, [100, 300])
    >>> lines[1]
    'total: 200 ns median ± 100 ns IQR · 3 nodes · coverage ?'
    >>> lines[2]
    'overhead: 52 ns/node, subtracted · clock ? · dropped records: ?'
    """
    totals = summary_of_totals(run_totals)
    runs = n_runs if meta.get("runs") is None else meta["runs"]
    coverage = meta.get("coverage")
    cov_text = "?" if coverage is None else format_pct(100.0 * coverage)
    if coverage is not None and _call_text(meta) and meta["call"].get("resolved") is True:
        cov_text += " of your call"
    overhead = meta.get("overhead_ns")
    ovh_text = "?" if overhead is None else f"{format_ns(overhead)}/node, subtracted"
    versions = meta.get("versions")
    ver_text = (", ".join(f"{k} {v}" for k, v in versions.items())
                if isinstance(versions, dict) and versions else "?")
    return [
        f"pyfxprof — {_meta(meta, 'model')} on {_meta(meta, 'device')} · {runs} runs "
        f"({_meta(meta, 'warmup')} warmup) · mode {_meta(meta, 'mode')} · "
        f"capture {_meta(meta, 'capture_mode')} · {model_mode_text(meta)}",
        f"total: {format_ns(totals['median'])} median ± {format_ns(totals['iqr'])} IQR"
        f"{_eager_text(meta)} · {n_nodes} nodes · coverage {cov_text}" + _rows_text(meta)
        + _between_text(meta)
        + _flops_text(meta),
        f"overhead: {ovh_text} · {_clock_text(meta.get('clock'))} · "
        f"dropped records: {_meta(meta, 'dropped_records')}",
        *([f"numeric: {numeric_mode_text(meta)}"] if "autocast" in meta else []),
        *_device_lines(meta),
        f"cpu {_meta(meta, 'cpu')} · threads {_meta(meta, 'threads')} · versions {ver_text} · "
        f"at {_meta(meta, 'timestamp')}",
        *(f"capture: {note}" for note in meta.get("capture_notes") or ()),
        *row_lines(meta),
        *_per_run_lines(meta),
        *_backward_lines(meta),
        *_loop_lines(meta),
    ]


def row_lines(meta: dict) -> list[str]:
    """What a row holds and where its other figures are. A node's row is its call where it
    runs in the model (the timer around the node's call in the graph, or the hooks around a
    module's): a small node after a large one reads several times its cost alone and can
    read more than removing it saves (benchmarks/README.md, docs/accuracy.md). A compiled
    profile's row is a kernel where it runs.

    >>> row_lines({"capture_mode": "fx"})[0].split(" · ")[0]
    "a row: the node's call where it runs in the model"
    >>> row_lines({"capture_mode": "inductor"})[0].split(" · ")[0]
    'a row: the kernel where it runs in the compiled call, launch included'
    """
    if meta.get("capture_mode") == INDUCTOR:
        return ["a row: the kernel where it runs in the compiled call, launch included · "
                "the call's rest: (outside kernels) · a kernel's source node alone: replay "
                "it in an eager profile · docs/replay.md"]
    first = ("a row: the node's call where it runs in the model · its Python call, dispatch "
             "and kernel · its output's allocation and page faults · the cache misses the "
             "nodes before it left")
    return [first, _alone_line(meta.get("alone"))]


def _alone_line(alone) -> str:
    """How the row differs from the node alone: with the Alone column (meta["alone"],
    run/alone.py) what it is and which to trust for a saving; without it, where to get it.

    >>> _alone_line({"timed": 3, "rows": "top"}).split(" · ")[0]
    'Alone: the node replayed alone, warm (its median), for the top rows'
    >>> _alone_line({"timed": 0, "rows": "top", "budget_s": 0.004}).split(" · ")[0]
    'no node timed alone: 4 ms for it (a tenth of the profiling time) was too little'
    """
    if not isinstance(alone, dict):
        return ("a row is not the node alone: after a large node · a small one can cost "
                "several times less alone · removing it can save less than its row · "
                "prof.replay(node) or `pyfxprof replay` times it alone beside its row · "
                "docs/accuracy.md")
    if not alone.get("timed"):
        budget = alone.get("budget_s")
        why = (f"{budget * 1e3:.0f} ms for it (a tenth of the profiling time) was too little"
               if isinstance(budget, (int, float)) else "none of the rows asked could be")
        return (f"no node timed alone: {why} · a small node after a large one can cost "
                "several times less alone · profile(..., alone=[nodes]) or prof.replay(node) "
                "times it · docs/accuracy.md")
    which = "for the top rows" if alone.get("rows") == "top" else "for the rows asked"
    return (f"Alone: the node replayed alone, warm (its median), {which} · Row/alone above "
            "1.1x: its place in the model (a cold input after a large node) costs more than "
            "the op · what removing or fusing it saves is nearer the row than Alone · "
            "docs/accuracy.md")


def _per_run_lines(meta: dict) -> list[str]:
    """Where the runs were not made inside the user's call (meta "call"'s ``not_per_run``):
    the outside row is one figure, the same in every run, so per-run figures are the
    graph's runs' (data.outside_graph.outside_runs).

    >>> _per_run_lines({"call": {"not_per_run": "your model's call does not reach its forward",
    ...     "resolved": True}})[0].split(": ", 1)[1]
    "your model's call does not reach its forward: the outside row is your plain calls' median, the same in every run; per-run figures (tail, p99, drift, warm-up, preemption) are the graph's runs'"
    >>> _per_run_lines({"call": {"per_run": True}})
    []
    """
    call = meta.get("call")
    if not isinstance(call, dict) or not isinstance(call.get("not_per_run"), str):
        return []
    reason = call["not_per_run"]
    row = ("the outside row is your plain calls' median, the same in every run"
           if call.get("resolved") is True else "no outside row")
    return [f"per run: {reason}: {row}; per-run figures (tail, p99, drift, warm-up, "
            "preemption) are the graph's runs'"]


def _loop_lines(meta: dict) -> list[str]:
    """The Profiler loop's word on the user's program: the model's own forward timed beside
    the graph runs, and the window's calls not timed per node, by reason.

    >>> _loop_lines({"loop": {"own_call_ns": 2.3e6, "untimed_calls": {"no graph": 2}}})[0]
    "loop: the model's own forward 2.30 ms (timed beside the graph runs, on copies)"
    >>> _loop_lines({"loop": {"untimed_calls": {"no graph": 2}}})[0]
    'loop: 2 calls of the window not timed per node: no graph'
    """
    loop = meta.get("loop") or {}
    lines = []
    if loop.get("own_call_ns") is not None:
        lines.append(f"loop: the model's own forward {format_ns(loop['own_call_ns'])} (timed "
                     "beside the graph runs, on copies)")
    for why, count in (loop.get("untimed_calls") or {}).items():
        lines.append(f"loop: {plural(count, 'call')} of the window not timed "
                     f"per node: {why}")
    return lines


def _backward_lines(meta: dict) -> list[str]:
    """How a training step's backward was timed, or why a Profiler(backward=True) window has
    no backward columns.

    >>> _backward_lines({"backward_mechanism": "aot", "backward_overhead_ns": 14.2})
    ['backward: aot · 14 ns/node, subtracted']
    """
    lines = []
    if meta.get("backward_mechanism"):
        cost = meta.get("backward_overhead_ns")
        lines.append(f"backward: {meta['backward_mechanism']}"
                     + ("" if cost is None else f" · {format_ns(cost)}/node, subtracted"))
    if meta.get("backward_note"):
        lines.append(f"backward: {meta['backward_note']}")
    return lines


def model_mode_text(meta: dict) -> str:
    """'model <eval|train> [(given in ... mode)], <autograd>': the mode the model ran in.

    >>> model_mode_text({"training": False, "given_training": True, "autograd": "inference_mode"})
    'model eval (given in train mode), inference_mode'
    >>> model_mode_text({})
    'model ?, ?'
    >>> model_mode_text({"exported": True, "autograd": "no_grad"})
    'model exported, no_grad'
    """
    if meta.get("exported"):  # an exported program has no eval/train modes
        return f"model exported, {_meta(meta, 'autograd')}"

    def name(training) -> str:
        return "?" if training is None else ("train" if training else "eval")

    ran, given = meta.get("training"), meta.get("given_training")
    given_text = "" if given is None or given == ran else f" (given in {name(given)} mode)"
    return f"model {name(ran)}{given_text}, {_meta(meta, 'autograd')}"


def numeric_mode_text(meta: dict) -> str:
    """The numbers the run computed with (capture.model_state.numeric_mode's keys): autocast,
    the parameters' and inputs' dtypes, the inputs' memory formats, the autograd mode.

    >>> numeric_mode_text({"autocast": {"cpu": "bfloat16"}, "param_dtypes": ["float32"],
    ...     "input_dtypes": ["float32"], "input_memory_formats": ["channels_last"],
    ...     "autograd": "inference_mode"})
    'autocast cpu bfloat16 · parameters float32 · inputs float32 channels_last · inference_mode'
    >>> numeric_mode_text({"autocast": {}})
    'autocast off · parameters ? · inputs ? ? · ?'
    """
    def listed(key: str) -> str:
        values = meta.get(key)
        return ", ".join(values) if values else "?"

    autocast = meta.get("autocast") or {}
    autocast_text = ", ".join(f"{device} {dtype}" for device, dtype in autocast.items())
    return (f"autocast {autocast_text or 'off'} · parameters {listed('param_dtypes')} · "
            f"inputs {listed('input_dtypes')} {listed('input_memory_formats')} · "
            f"{_meta(meta, 'autograd')}")


def numeric_mode_difference(control: dict, test: dict,
                            labels: tuple[str, str] = ("control", "test")) -> str | None:
    """'numeric mode differs (control vs test): ...', each differing part of the two
    profiles' numeric modes (see numeric_mode_text) side by side; None when alike or when
    either profile does not state it.

    >>> numeric_mode_difference({"autocast": {}}, {"autocast": {"cpu": "bfloat16"}})
    'numeric mode differs (control vs test): autocast off vs autocast cpu bfloat16'
    """
    if "autocast" not in control or "autocast" not in test:
        return None
    parts = zip(*(numeric_mode_text(meta).split(" · ") for meta in (control, test)))
    changes = [f"{ours} vs {theirs}" for ours, theirs in parts if ours != theirs]
    if not changes:
        return None
    return f"numeric mode differs ({labels[0]} vs {labels[1]}): {'; '.join(changes)}"


#: How far (a fraction) the plain calls' median, timed in a block after the runs, may be
#: from the runs' own calls at the plain level before the header names it.
PLAIN_BLOCK_APART = 0.1


def _rows_text(meta: dict) -> str:
    """' · rows sum to R% of your call' (the rows' medians summed against the call's median,
    meta "call"'s rows_share), or "" for a profile without one; then _plain_block_text.

    >>> _rows_text({"call": {"rows_share": 0.974}})
    ' · rows sum to 97.4% of your call'
    """
    call = meta.get("call")
    if not isinstance(call, dict):
        return ""
    share = call_figure(call, "rows_share")
    text = "" if share is None else f" · rows sum to {format_pct(100.0 * share)} of your call"
    return text + _plain_block_text(call)


def _plain_block_text(call: dict) -> str:
    """Where the runs were made inside the user's calls and the plain calls (timed in their
    own block after the runs) are more than PLAIN_BLOCK_APART from them: that block's median
    (the host's speed moved between the blocks; the header's figures are the runs' own);
    else "".

    >>> _plain_block_text({"per_run": True, "median_ns": 2e6, "plain_median_ns": 1e6})
    " · your plain calls in their own block after the runs 1.00 ms median (-50.0%: the host's speed moved; the figures here are the runs' own calls)"
    >>> _plain_block_text({"per_run": True, "median_ns": 2e6, "plain_median_ns": 1.9e6})
    ''
    """
    plain, median = call_figure(call, "plain_median_ns"), call_figure(call, "median_ns")
    if call.get("per_run") is not True or not plain or not median or \
            abs(plain / median - 1.0) <= PLAIN_BLOCK_APART:
        return ""
    return (f" · your plain calls in their own block after the runs {format_ns(plain)} median "
            f"({100.0 * (plain / median - 1.0):+.1f}%: the host's speed moved; the figures here "
            "are the runs' own calls)")


def _call_text(meta: dict, what: str = "graph") -> str | None:
    """What the total is against the user's call (meta "call", data.outside_graph), or None
    for a profile without one; `what` names the graph part ("graph", "2 graphs and the
    Python between them").

    >>> _call_text({"call": {"resolved": True, "graph_median_ns": 1e6, "median_ns": 2e6,
    ...     "outside_median_ns": 1e6, "outside_low_ns": 9e5, "outside_high_ns": 1e6}})
    ' (your call; graph 1.00 ms, Python outside its nodes 1.00 ms = 50.0%)'
    >>> _call_text({"call": {"resolved": False, "median_ns": 1e6, "graph_median_ns": 1e6,
    ...     "outside_median_ns": 0, "outside_low_ns": -2e3, "outside_high_ns": 3e3}}
    ...     ).split(", Python")[1]
    ' outside the graph below the noise: -2.00 µs..3.00 µs)'
    >>> _call_text({"call": {"resolved": False, "median_ns": 1e6, "graph_median_ns": 1e6,
    ...     "outside_median_ns": -2e3, "outside_low_ns": -3e3, "outside_high_ns": -1e3}}
    ...     ).split("median, ")[1]
    "shorter than the graph's rows by 1.00 µs..3.00 µs: no Python outside the graph to show)"
    """
    call = meta.get("call")
    if not isinstance(call, dict):
        return None
    if call.get("error"):
        return f" ({what}; your call failed: {call['error']})"
    figures = ("median_ns", "graph_median_ns", "outside_median_ns", "outside_low_ns",
               "outside_high_ns")
    if any(call_figure(call, key) is None for key in figures) or not call["median_ns"]:
        return None  # not a call pyfxprof measured
    after = ", timed after the runs" if call.get("interleaved") is False else ""
    if call.get("compiled") is True:
        return _compiled_call_text(call)
    if call.get("resolved") is True:
        share = format_pct(100.0 * call["outside_median_ns"] / call["median_ns"])
        return (f" (your call{after}; {what} {format_ns(call['graph_median_ns'])}, Python "
                f"outside its nodes {format_ns(call['outside_median_ns'])} = {share})")
    interval = f"{format_ns(call['outside_low_ns'])}..{format_ns(call['outside_high_ns'])}"
    if call["outside_high_ns"] < 0:  # the instrumented nodes alone outlast the plain call
        by = f"{format_ns(-call['outside_high_ns'])}..{format_ns(-call['outside_low_ns'])}"
        return (f" ({what}; your call{after} {format_ns(call['median_ns'])} median, shorter "
                f"than the graph's rows by {by}: no Python outside the graph to show)")
    return (f" ({what}; your call{after} {format_ns(call['median_ns'])} median, Python "
            f"outside the graph below the noise: {interval})")


def _compiled_call_text(call: dict) -> str:
    """What a compiled profile's total is: the user's compiled call, each run made inside
    it, the guards and wrapper in the outside row (data.outside_graph.with_compiled_call).

    >>> _compiled_call_text({"median_ns": 4e5, "level_ns": -2e3, "per_run": True})
    ' (your compiled call 400 µs median, each run inside it; guards and wrapper in (outside kernels), your call beyond the profiled one -2.00 µs)'
    """
    inside = "each run inside it" if call.get("per_run") else "timed after the runs"
    level = call_figure(call, "level_ns")
    beyond = "" if level is None else f", your call beyond the profiled one {format_ns(level)}"
    return (f" (your compiled call {format_ns(call['median_ns'])} median, {inside}; guards and "
            f"wrapper in (outside kernels){beyond})")


def _eager_text(meta: dict) -> str:
    """What the total is: against the user's call (_call_text); in profiles saved before
    that was measured, ' (graph; eager forward <t> median)' on the dynamo rung, where the
    total is the graph's (several graphs: from the first graph's start to the last one's
    end, the Python between them included; said also where no eager forward was timed, as
    in the Profiler loop).

    >>> _eager_text({"eager_forward_median_ns": 2.3e6})
    ' (graph; eager forward 2.30 ms median, timed after the runs)'
    >>> _eager_text({"eager_forward_median_ns": 2.3e6, "graphs": 2}).split(";")[0]
    ' (2 graphs and the Python between them'
    >>> _eager_text({"graphs": 3})
    ' (3 graphs and the Python between them)'
    """
    graphs = meta.get("graphs", 1)
    what = "graph" if graphs == 1 else f"{graphs} graphs and the Python between them"
    call = _call_text(meta, what)
    if call is not None:
        return call
    eager = meta.get("eager_forward_median_ns")
    if eager is None:
        error = meta.get("eager_forward_error")
        if error is None:
            return f" ({what})" if graphs > 1 else ""
        return f" ({what}; eager forward failed: {error})"
    return f" ({what}; eager forward {format_ns(eager)} median, timed after the runs)"


def _between_text(meta: dict) -> str:
    """' · between nodes <t>/run': time in a run that no node's timed call covers.

    >>> _between_text({"between_nodes_ns": 1500.0})
    ' · between nodes 1.50 µs/run'
    """
    between = meta.get("between_nodes_ns")
    return "" if between is None else f" · between nodes {format_ns(between)}/run"


def _flops_text(meta: dict) -> str:
    """' · <model FLOPs>' when the profile counted them, and the CUDA peak when measured."""
    text = "" if meta.get("flops") is None else f" · {format_flops(meta['flops'])}"
    if meta.get("cuda_peak_bytes") is not None:
        text += f" · CUDA peak {format_si(meta['cuda_peak_bytes'])}B"
    return text


def _device_lines(meta: dict) -> list[str]:
    """The device line, only for profiles with CUDA event timing."""
    if not meta.get("device_events"):
        return []
    busy = meta.get("device_busy_share")
    busy_text = "?" if busy is None else format_pct(100.0 * busy)
    below = meta.get("device_below_resolution")
    cost = meta.get("device_event_cost_ns")
    return [f"device: busy {busy_text} of the run · CUDA events via {meta['device_events']} "
            "(resolution ~0.5 µs, stream current at run start)"
            + ("" if cost is None else f" · event record {format_ns(cost)} host")
            + (f" · {below} nodes under the resolution: device times are noise" if below
               else "")]
