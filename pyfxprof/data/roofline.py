"""The measured roofline of a Profile (``Profile.roofline``): per node or module, FLOPs and
bytes moved against the machine's measured peaks, the bound, the efficiency with its 95%
interval and the headroom. A pure function of Profile data (docs/roofline.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import ArgumentError, PyfxprofError, whole_number
from ..stats.node_statistics import group_samples
from ..stats.order_statistics import order_ranks
from .profile import Profile
from .rollup import module_keys
from .roofline_ops import op_kind
from .validate import model_nodes

#: The columns of Profile.roofline, in order (docs/roofline.md says each one's unit).
COLUMNS = ("name", "kind", "dtype", "flops", "bytes", "intensity", "median_ns", "flops_per_s",
           "bytes_per_s", "attainable_flops_per_s", "roof_ns", "first_touch_ns", "fixed_ns",
           "bound", "efficiency", "efficiency_low", "efficiency_high", "waited", "headroom",
           "unknown_ops")
#: The ways to group: None (per node) or "module" (per module at `depth`).
GROUP_BY = (None, "module")
#: The ops of a training step's own rows (run.training: the loss, gradient accumulation and
#: the autograd engine), whose work the analysis run does not see: no roofline rows.
TRAINING_ROWS = ("loss", "backward")
#: After the name of a backward row (profiles of training steps, ``backward=True``).
BACKWARD_SUFFIX = " (backward)"
#: The peak dtype of a node whose dtype has no measured peak (integer ops, float64...).
FALLBACK_DTYPE = "float32"
#: The runs waited for cores when the process's threads spent, summed, at least this share
#: of a run's median time runnable but not running (meta ``core_wait_ns_per_run``): a
#: node's time is then partly the scheduler's, by as much as this share or more.
WAIT_SHARE = 0.25


def profile_peaks(profile: Profile, peaks: dict | None = None) -> dict[str, Any]:
    """The peaks a roofline of `profile` uses: `peaks` when given, else those profile() stored
    in its meta (``machine_peaks``); a one-line error saying how to get them otherwise."""
    found = peaks if peaks is not None else profile.meta.get("machine_peaks")
    if not isinstance(found, dict) or "flops" not in found or "bandwidth" not in found:
        raise PyfxprofError("this profile has no machine peaks: call prof.roofline() on the "
                            "machine that made it (it measures them once), or pass "
                            "peaks=pyfxprof.machine_peaks() measured there")
    return found


def _column(nodes: pd.DataFrame, name: str, default: float = np.nan) -> np.ndarray:
    """A numeric nodes column as float64 (`default` where the profile lacks it)."""
    if name not in nodes:
        return np.full(len(nodes), default)
    return pd.to_numeric(nodes[name], errors="coerce").to_numpy(dtype=np.float64)


def _samples(profile: Profile) -> np.ndarray:
    """The times the roof bounds: the device's where measured (GPU), else the host's."""
    return profile.device_samples if profile.device_samples is not None else profile.samples


def _medians(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(median, low, high) per column: the median and its distribution-free 95% interval
    (the order statistics stats.order_statistics.order_ranks picks for this many runs; an
    end too few runs cannot reach is 0 below, inf above)."""
    ordered = np.sort(samples.astype(np.float64), axis=0)
    n, columns = ordered.shape
    low, high = order_ranks(n, 0.5)
    return (np.median(ordered, axis=0),
            ordered[low - 1] if low >= 1 else np.zeros(columns),
            ordered[high - 1] if high <= n else np.full(columns, np.inf))


def _work(nodes: pd.DataFrame, peaks: dict) -> dict[str, np.ndarray]:
    """Per node: flops (matrix + vector), bytes (read + parameters + written; none for a
    get_attr, which hands over a reference, nor for a node without FLOPs whose outputs alias
    its inputs: a view), the time each takes at its roof (compute_ns: the matrix FLOPs at
    the dtype's GEMM peak, the vector FLOPs at the fastest measured one, vector_peak;
    memory_ns at the triad bandwidth plus first_touch_ns), its compute peak (its FLOPs over
    compute_ns) and the fixed cost of its op kind."""
    matrix, vector = (np.nan_to_num(_column(nodes, name)) for name in ("flops", "vector_flops"))
    flops = matrix + vector
    moved = (_column(nodes, "in_bytes") + _column(nodes, "param_bytes", 0.0)
             + _column(nodes, "out_bytes"))
    aliases = (nodes["aliases_input"].fillna(False).astype(bool).to_numpy()
               if "aliases_input" in nodes else np.zeros(len(nodes), dtype=bool))
    moved[(nodes["op"] == "get_attr").to_numpy() | (aliases & (flops == 0))] = 0.0
    dtypes = (nodes["dtype"].astype(str) if "dtype" in nodes
              else pd.Series([""] * len(nodes))).tolist()
    rates = peaks["flops"]
    gemm = np.array([float(rates.get(d) or rates[FALLBACK_DTYPE]) for d in dtypes])
    kinds = [op_kind(str(t), str(m) if op == "call_module" else "")  # a module call's type
             for t, m, op in zip(nodes["target"], nodes["module_type"], nodes["op"])]
    fixed = peaks.get("fixed_ns") or {}
    touch = first_touch_ns(nodes, peaks)
    compute = (matrix / gemm + vector / vector_peak(peaks)) * 1e9
    with np.errstate(divide="ignore", invalid="ignore"):
        peak = np.where(compute > 0, flops / compute * 1e9, gemm)
    memory = moved / float(peaks["bandwidth"]) * 1e9 + touch
    return {"flops": flops, "bytes": moved, "compute_ns": compute, "memory_ns": memory,
            "first_touch_ns": touch, "roof_ns": np.fmax(compute, memory),
            "fixed_ns": np.array([float(fixed.get(k, 0.0)) for k in kinds]),
            "peak": peak, "kind": np.array(kinds, dtype=object),
            "dtype": np.array(dtypes, dtype=object)}


def vector_peak(peaks: dict) -> float:
    """The compute roof of vector FLOPs (element-wise ops, reductions, norms, softmax,
    pooling), whatever their dtype: the fastest measured GEMM peak, the machine's arithmetic
    limit. A dtype's GEMM peak bounds only its matrix products: a CPU without 16-bit matrix
    instructions multiplies bfloat16 matrices in a slow kernel while it adds bfloat16
    tensors at its vector rate.

    Example:
        >>> vector_peak({"flops": {"float32": 1.4e11, "bfloat16": 1.4e9, "float16": None}})
        140000000000.0
    """
    return max(float(rate) for rate in peaks["flops"].values() if rate)


def first_touch_ns(nodes: pd.DataFrame, peaks: dict) -> np.ndarray:
    """Per node, what first touching its fresh outputs costs at least (docs/roofline.md):
    the peaks' ``first_touch_ns_per_byte`` x the bytes its timed runs faulted in
    (``faulted_bytes``, from the page faults measured around them: faulted_bytes) where
    the nodes have them; else (a profile without a fault count) x ``fresh_out_bytes`` where
    its largest fresh output (``fresh_out_largest``) reaches ``first_touch_bytes``, the
    smallest allocation the machine maps anew on every call; 0 elsewhere, and for peaks or
    nodes without them.

    Example:
        >>> nodes = pd.DataFrame({"fresh_out_bytes": [64 << 20, 1 << 20],
        ...                       "fresh_out_largest": [32 << 20, 1 << 20]})
        >>> first_touch_ns(nodes, {"first_touch_bytes": 32 << 20,
        ...                        "first_touch_ns_per_byte": 0.5}).tolist()
        [33554432.0, 0.0]
    """
    threshold, cost = peaks.get("first_touch_bytes"), peaks.get("first_touch_ns_per_byte")
    if "faulted_bytes" in nodes and cost:
        return np.nan_to_num(_column(nodes, "faulted_bytes", 0.0)) * float(cost)
    if not threshold or not cost:
        return np.zeros(len(nodes))
    largest = np.nan_to_num(_column(nodes, "fresh_out_largest", 0.0))
    return np.where(largest >= float(threshold),
                    np.nan_to_num(_column(nodes, "fresh_out_bytes", 0.0)) * float(cost), 0.0)


def faulted_bytes(nodes: pd.DataFrame, meta: dict, peaks: dict) -> np.ndarray | None:
    """Per node, the bytes of its fresh outputs its timed runs faulted in: the minor page
    faults the process took per timed run (``meta["faults_per_run"]``, in a steady state
    all of them from fresh allocations) over those a first touch takes per page (the
    peaks' ``first_touch_faults_per_page``, default 1) x ``meta["page_bytes"]``, shared
    among the nodes in proportion to their ``fresh_out_bytes`` and each at most those
    (faults are counted per run, not per node); None for a profile without a fault count.

    Example:
        >>> nodes = pd.DataFrame({"fresh_out_bytes": [3 << 20, 1 << 20, 0]})
        >>> meta = {"faults_per_run": 1024, "page_bytes": 4096}
        >>> (faulted_bytes(nodes, meta, {"first_touch_faults_per_page": 2.0}) / 2**20).tolist()
        [1.5, 0.5, 0.0]
    """
    per_run, page = meta.get("faults_per_run"), meta.get("page_bytes")
    if per_run is None or not page:
        return None
    pages = max(float(per_run), 0.0) / float(peaks.get("first_touch_faults_per_page") or 1.0)
    fresh = np.nan_to_num(_column(nodes, "fresh_out_bytes", 0.0))
    total = float(fresh.sum())
    return np.minimum(fresh * (pages * float(page) / total if total > 0 else 0.0), fresh)


def core_wait_share(profile: Profile) -> float | None:
    """How long the process's threads waited for a core per run, summed over the threads
    (``meta["core_wait_ns_per_run"]``: runnable, not running; run.run_counters), over the
    median run: at WAIT_SHARE or more the runs waited for cores (more runnable threads than
    the machine had cores for them: other processes, or more torch threads than free
    cores). None for a profile without the count (an older one, or not Linux).

    Example:
        >>> from types import SimpleNamespace as Fake
        >>> core_wait_share(Fake(meta={"core_wait_ns_per_run": 500.0},
        ...                      run_totals=np.array([1000, 2000, 3000])))
        0.25
    """
    wait = profile.meta.get("core_wait_ns_per_run")
    median = float(np.median(profile.run_totals)) if len(profile.run_totals) else 0.0
    return None if wait is None or median <= 0 else float(wait) / median


def _bound(compute_ns: np.ndarray, memory_ns: np.ndarray, roof: np.ndarray,
           fixed_ns: np.ndarray) -> np.ndarray:
    """"overhead" where the op's fixed cost is at least the time the roof allows (`roof`),
    else "compute" or "memory" by the longer of the two roof times; "" where bytes are
    unknown."""
    bound = np.where(compute_ns >= memory_ns, "compute", "memory").astype(object)
    bound[fixed_ns >= roof] = "overhead"
    bound[np.isnan(memory_ns)] = ""
    return bound


def _frame(names: list, work: dict[str, np.ndarray], samples: np.ndarray,
           unknown: list[str], waited: bool) -> pd.DataFrame:
    """The COLUMNS of rows `names` from their `work` (_work, summed for groups), their
    per-run `samples` and whether the runs `waited` for cores (core_wait_share)."""
    median, low, high = _medians(samples) if samples.shape[0] else (
        np.full(len(names), np.nan),) * 3
    roof = work["roof_ns"]
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = work["flops"] / work["bytes"]
        frame = pd.DataFrame({
            "name": names, "kind": work["kind"], "dtype": work["dtype"],
            "flops": work["flops"], "bytes": work["bytes"], "intensity": intensity,
            "median_ns": median, "flops_per_s": work["flops"] / median * 1e9,
            "bytes_per_s": work["bytes"] / median * 1e9,
            "attainable_flops_per_s": np.fmin(work["peak"],
                                              work["flops"] / work["memory_ns"] * 1e9),
            "roof_ns": roof, "first_touch_ns": work["first_touch_ns"],
            "fixed_ns": work["fixed_ns"],
            "bound": _bound(work["compute_ns"], work["memory_ns"], roof, work["fixed_ns"]),
            "efficiency": _ratio(roof, median), "efficiency_low": _ratio(roof, high),
            "efficiency_high": np.where(low > 0, _ratio(roof, low), np.inf),
            "waited": np.full(len(names), waited),
            "headroom": np.fmax(median - roof, 0.0),
            "unknown_ops": unknown})
    return frame[list(COLUMNS)]


def _ratio(roof: np.ndarray, time: np.ndarray) -> np.ndarray:
    """roof / time, NaN where the time is not positive (below the clock's resolution)."""
    return np.where(time > 0, roof / np.where(time > 0, time, 1.0), np.nan)


def _grouped(keys: list, work: dict[str, np.ndarray], samples: np.ndarray,
             unknown: list[str]) -> tuple[list, dict[str, np.ndarray], np.ndarray, list[str]]:
    """`work` summed per key (a module's time at its roofs is its nodes' sum: they run one
    after another; its bound the longer of its summed compute and memory times, or
    overhead), the samples summed per run, the unknown ops joined; the peak of a group
    is its FLOP-weighted rate, its dtype and kind its first node's."""
    names, summed = group_samples(samples, keys)
    codes = pd.factorize(np.asarray(keys, dtype=object), use_na_sentinel=False)[0]
    add = {name: np.bincount(codes, weights=np.nan_to_num(work[name], nan=0.0))
           for name in ("flops", "bytes", "compute_ns", "memory_ns", "first_touch_ns", "roof_ns",
                        "fixed_ns")}
    missing = np.bincount(codes, weights=np.isnan(work["bytes"]).astype(float)) > 0
    add["bytes"][missing] = add["memory_ns"][missing] = add["roof_ns"][missing] = np.nan
    first = [int(np.argmax(codes == code)) for code in range(len(names))]
    with np.errstate(divide="ignore", invalid="ignore"):
        add["peak"] = np.where(add["compute_ns"] > 0,
                               add["flops"] / add["compute_ns"] * 1e9, work["peak"][first])
    add.update(kind=np.array(["module"] * len(names), dtype=object), dtype=work["dtype"][first])
    ops = [_joined(u for u, c in zip(unknown, codes) if c == code)
           for code in range(len(names))]
    return names, add, summed, ops


def _joined(texts) -> str:
    """Comma-separated op lists joined, each op once, in first-seen order."""
    return ", ".join(dict.fromkeys(op for text in texts for op in str(text).split(", ") if op))


def roofline(profile: Profile, group_by: str | None = None, depth: int = 1,
             peaks: dict | None = None) -> pd.DataFrame:
    """Each node's (``group_by="module"``: each module's, at `depth`) place under the
    machine's measured roofs: ``flops`` (matrix and vector FLOPs), ``bytes`` (a lower bound:
    inputs, parameters and outputs once each), ``intensity`` (FLOP/byte), ``median_ns``,
    ``flops_per_s``, ``bytes_per_s``, ``attainable_flops_per_s`` (min(peak, intensity x
    bandwidth, the first touch of fresh outputs included)), ``roof_ns`` (its time at the
    roof), ``first_touch_ns`` (the part of it spent first touching fresh outputs the machine
    maps anew on every call: what writing into a kept buffer saves), ``fixed_ns`` (its op
    kind's fixed cost), ``bound`` (compute, memory or overhead), ``efficiency`` (roof_ns /
    median, with ``efficiency_low``/``_high`` from the median's 95% interval), ``waited``
    (the runs waited for cores: core_wait_share; the efficiency is then partly the
    scheduler's, a lower bound of the op's), ``headroom`` (ns: median minus roof_ns) and
    ``unknown_ops`` (ops whose FLOPs are not counted). A training step's profile
    (``backward=True``) has a row per node's backward too, named "NAME (backward)" (its work
    by the convention of backward_nodes).

    The peaks are `peaks`, else the profile's ``meta["machine_peaks"]`` (profile() stores
    them when pyfxprof.machine_peaks() has measured this machine). ``attrs`` holds
    ``peaks``, ``total_headroom_ns`` / ``total_roof_ns`` / ``total_median_ns``,
    ``core_wait_share`` and ``unknown_rows``; ``Profile.roofline`` (views/roofline_text.py) adds ``header``, a line
    naming the peaks and the total headroom. docs/roofline.md.

    Example:
        >>> frame = prof.roofline()  # doctest: +SKIP
        >>> frame[["name", "bound", "efficiency"]].head(3)  # doctest: +SKIP
    """
    if group_by not in GROUP_BY:
        raise ArgumentError(f"group_by must be None or 'module', got {group_by!r}")
    depth = whole_number("depth", depth, minimum=1)
    found = profile_peaks(profile, peaks)
    mask = model_nodes(profile.nodes) & ~profile.nodes["op"].isin(TRAINING_ROWS).to_numpy()
    nodes = profile.nodes[mask].reset_index(drop=True)
    faulted = None if profile.backward_samples is not None else faulted_bytes(  # (a training
        nodes, profile.meta, found)            # step's faults are its backward's too)
    if faulted is not None:
        nodes = nodes.assign(faulted_bytes=faulted)
    share = core_wait_share(profile)
    waited = share is not None and share >= WAIT_SHARE
    frames = [_rows(nodes, _samples(profile)[:, mask], found, group_by, depth, "", waited)]
    if profile.backward_samples is not None:
        timed = profile.backward_samples[:, mask]
        ran = np.median(timed, axis=0) > 0 if len(timed) else np.zeros(len(nodes), bool)
        frames.append(_rows(backward_nodes(nodes[ran].reset_index(drop=True)), timed[:, ran],
                            found, group_by, depth, BACKWARD_SUFFIX, waited))
    return _with_totals(pd.concat(frames, ignore_index=True), found, share)


def _rows(nodes: pd.DataFrame, samples: np.ndarray, peaks: dict, group_by: str | None,
          depth: int, suffix: str, waited: bool) -> pd.DataFrame:
    """The roofline rows of `nodes` timed `samples` (per node or module), `suffix` after
    each name, `waited` as _frame's."""
    work = _work(nodes, peaks)
    unknown = (nodes["unknown_ops"].fillna("").astype(str).tolist() if "unknown_ops" in nodes
               else [""] * len(nodes))
    names = nodes["name"].astype(str).tolist()
    if group_by == "module":
        names, work, samples, unknown = _grouped(module_keys(nodes, depth), work, samples,
                                                 unknown)
    return _frame([f"{name}{suffix}" for name in names], work, samples, unknown, waited)


def backward_nodes(nodes: pd.DataFrame) -> pd.DataFrame:
    """`nodes` with the work of their backward (a convention, docs/roofline.md): twice the
    matrix FLOPs (the gradients of the input and of the weights), the vector FLOPs once;
    reading the output's gradient, the saved inputs and the parameters, writing the inputs'
    and the parameters' gradients, each once; no first touch charged.

    Example:
        >>> nodes = pd.DataFrame({"flops": [10], "vector_flops": [3], "in_bytes": [8],
        ...                       "param_bytes": [4], "out_bytes": [2]})
        >>> backward_nodes(nodes).iloc[0].tolist()
        [20, 3, 16, 8, 2]
    """
    work = nodes.drop(columns=["fresh_out_bytes", "fresh_out_largest", "faulted_bytes"],
                      errors="ignore")
    for column in ("flops", "in_bytes", "param_bytes"):
        if column in work:
            work[column] = 2 * pd.to_numeric(work[column], errors="coerce")
    return work


def _with_totals(frame: pd.DataFrame, peaks: dict, share: float | None) -> pd.DataFrame:
    """`frame` with its attrs: the peaks, the totals, the core wait `share` and the rows
    without a FLOP formula."""
    roof, median = float(np.nansum(frame["roof_ns"])), float(np.nansum(frame["median_ns"]))
    headroom = float(np.nansum(frame["headroom"]))
    unknown = int((frame["unknown_ops"] != "").sum())
    frame.attrs.update(peaks=peaks, total_roof_ns=roof, total_median_ns=median,
                       total_headroom_ns=headroom, core_wait_share=share,
                       unknown_rows=unknown)
    return frame
