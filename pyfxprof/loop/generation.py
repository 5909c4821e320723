"""Per-step latency of generation loops from the Profiler's log of model calls: time to first
token (the prefill call) and per-token decode latency.

A call is a prefill when its first tensor argument holds more than one position along its
last dimension (the prompt, ``input_ids`` ``[batch, prompt_len]``), or when it is the first
call of the model in the Profiler's block. A call holding one position (one new token per
sequence) is a decode step when the model's previous call was recorded too (so a
generation cut by a schedule's NONE or WARMUP steps does not count its gap); otherwise it
is left out.

- time to first token: the prefill call's duration (the forward that computes the first
  token's logits);
- per-token decode latency: for each decode step, the time from the end of the previous
  call to the end of this one: the step's forward plus the loop's own work between calls
  (sampling, stopping checks, preparing the next inputs), i.e. what each token costs.

The calibrated cost of the call's marks is subtracted from both, as from run totals, and
the Profiler's own time between two calls (binding inputs, capturing a new signature,
adding and removing hooks) from the gap.

A recorded call runs the captured graph, without the Python around the model's ops; the
Profiler also times the model's own forward beside it (loop/calls.py), and each call's
``own_shift_ns`` (its group's own forward minus its graph run, medians) turns the graph's
figures into the user's program's: ``ttft_ns`` and ``decode_ns`` are the user's, with
``graph_ttft_ns`` and ``graph_decode_ns`` beside them (equal where no own call was timed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.units import format_ns, plural

_QUANTILES = {"median": 50, "p90": 90, "p99": 99}


@dataclass
class CallLog:
    """Model calls timed by a Profiler, in call order (arrays of equal length).

    start_ns, end_ns: the call's timed span. single_token: its first tensor argument holds
    one position along its last dimension. cost_ns: its calibrated instrumentation cost.
    paused_ns: the Profiler's own time between the previous call's end and this call's
    start. sequence: the call's number among all calls of the model the Profiler saw
    (recorded or not), so consecutive numbers mean no call in between. first: the first
    call of the model in its Profiler block. own_shift_ns: what the model's own forward
    takes beyond the graph run, for the call's group (None: 0).
    """

    start_ns: np.ndarray
    end_ns: np.ndarray
    single_token: np.ndarray
    cost_ns: np.ndarray
    paused_ns: np.ndarray
    sequence: np.ndarray
    first: np.ndarray
    own_shift_ns: np.ndarray | None = None  # the user's program minus the graph, per call


def _summary(values: np.ndarray) -> dict:
    """count, mean and the quantiles of `values` (ns as float; NaN when empty)."""
    out = {"count": int(values.size)}
    if values.size == 0:
        return {**out, "mean": float("nan"), **dict.fromkeys(_QUANTILES, float("nan"))}
    quantiles = np.percentile(values, list(_QUANTILES.values()))
    return {**out, "mean": float(values.mean()),
            **{name: float(q) for name, q in zip(_QUANTILES, quantiles)}}


def generation_latency(log: CallLog) -> dict:
    """``{"generations", "ttft_ns", "decode_ns"}``: the number of generations, and summaries
    (count, mean, median, p90, p99; ns) of the time to first token and of the per-token
    decode latency.

    Example:
        >>> log = CallLog(np.array([0, 120, 150, 180]), np.array([100, 130, 160, 195]),
        ...               np.array([False, True, True, True]), np.zeros(4), np.zeros(4),
        ...               np.arange(4), np.array([True, False, False, False]))
        >>> found = generation_latency(log)
        >>> found["generations"], found["ttft_ns"]["median"], found["decode_ns"]["median"]
        (1, 100.0, 30.0)
    """
    starts, ends = np.asarray(log.start_ns, np.float64), np.asarray(log.end_ns, np.float64)
    cost, paused = np.asarray(log.cost_ns, np.float64), np.asarray(log.paused_ns, np.float64)
    single, first = np.asarray(log.single_token, bool), np.asarray(log.first, bool)
    sequence = np.asarray(log.sequence, np.int64)
    follows = np.zeros(len(sequence), dtype=bool)
    follows[1:] = np.diff(sequence) == 1
    prefill = ~single | first
    decode = single & ~first & follows
    previous_end = np.concatenate([[np.nan], ends[:-1]])
    shift = np.zeros(len(sequence)) if log.own_shift_ns is None else \
        np.asarray(log.own_shift_ns, np.float64)
    ttft, gaps = (ends - starts - cost)[prefill], (ends - previous_end - cost - paused)[decode]
    return {"generations": int(prefill.sum()),
            "ttft_ns": _summary(ttft + shift[prefill]),
            "decode_ns": _summary(gaps + shift[decode]),
            "graph_ttft_ns": _summary(ttft), "graph_decode_ns": _summary(gaps)}


def format_latency(latency: dict) -> str:
    """Two lines: time to first token and per-token decode latency (with tokens/s).

    Example:
        >>> log = CallLog(np.array([0, 120]), np.array([100, 130]), np.array([False, True]),
        ...               np.zeros(2), np.zeros(2), np.arange(2), np.array([True, False]))
        >>> print(format_latency(generation_latency(log)))
        time to first token: 100 ns (1 prefill)
        per-token decode latency: median 30 ns, p90 30 ns, p99 30 ns over 1 token (33333333 tokens/s)
    """
    ttft, decode = latency["ttft_ns"], latency["decode_ns"]
    first = (f"time to first token: {format_ns(ttft['median'])}"
             + (f" median, p90 {format_ns(ttft['p90'])}" if ttft["count"] > 1 else "")
             + f" ({plural(ttft['count'], 'prefill')})"
             + _graph_text(ttft, latency.get("graph_ttft_ns")))
    if decode["count"] == 0:
        return first + "\nper-token decode latency: no decode step"
    rate = 1e9 / decode["median"] if decode["median"] > 0 else float("inf")
    return (first + f"\nper-token decode latency: median {format_ns(decode['median'])}, "
            f"p90 {format_ns(decode['p90'])}, p99 {format_ns(decode['p99'])} over "
            f"{plural(decode['count'], 'token')} ({rate:.0f} tokens/s)"
            + _graph_text(decode, latency.get("graph_decode_ns")))


def _graph_text(user: dict, graph: dict | None) -> str:
    """'; the graph alone: <median>' where the user's program and the graph differ."""
    if graph is None or graph["count"] == 0 or graph["median"] == user["median"]:
        return ""
    return f"; the graph alone: {format_ns(graph['median'])}"
