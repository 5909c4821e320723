"""Latency, warm-up, tail and sweep results as text: ``str(prof.latency())``,
``str(prof.warmup())``, ``render_tail(prof.tail())`` and ``SweepResult.render``.

The results themselves are plain data in pyfxprof.data (latency, warmup, tail, sweep_fit); these
renderers are served to them through the package root's ``_METHODS`` (docs/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..data.latency import QUANTILES
from ..stats.confidence import CONFIDENCE
from ..data.units import format_ns, format_pct

if TYPE_CHECKING:
    from ..data.latency import LatencySummary
    from ..data.sweep_fit import SweepResult
    from ..data.warmup import WarmupReport


def _aligned(titles: list[str], rows: list[list[str]]) -> list[str]:
    """The title line and the rows, the first column left-aligned, the others right-aligned."""
    widths = [max(len(t), *(len(row[i]) for row in rows)) for i, t in enumerate(titles)]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(cells, widths)))
            for cells in [titles] + rows]


def latency_line(summary: LatencySummary) -> str:
    """One line for report headers: quantiles, the p99 interval, preempted runs.

    >>> from pyfxprof.data.latency import latency_summary
    >>> latency_line(latency_summary([100] * 20))
    'latency: p50 100 ns · p90 100 ns · p99 100 ns [100 ns–unbounded] · max 100 ns'
    """
    low, high = summary.p99_ci
    ci = f"[{format_ns(low) if low is not None else '?'}–" \
         f"{format_ns(high) if high is not None else 'unbounded'}]"
    text = (f"latency: p50 {format_ns(summary.p50)} · p90 {format_ns(summary.p90)} · "
            f"p99 {format_ns(summary.p99)} {ci} · max {format_ns(summary.max)}")
    if summary.preempted is not None:
        text += f" · {summary.preempted} of {summary.n + summary.excluded} runs preempted"
    if summary.excluded:
        text += f" (excluded: {summary.n} runs left)"
    return text


def latency_header(profile) -> list[str]:
    """Header lines of a report: the latency line, and the warm-up line when the first timed
    runs were still warming up or the steady runs drift (none for profiles without runs).

    >>> latency_header(prof)  # doctest: +SKIP
    ['latency: p50 1.21 ms · p90 1.30 ms · p99 1.52 ms [1.41 ms–unbounded] · max 1.55 ms · 0 of 50 runs preempted']
    """
    if profile.n_runs == 0:
        return []
    lines = [latency_line(profile.latency())]
    warmup = profile.warmup()
    if warmup.runs or warmup.drift is not None:
        lines.append(render_warmup(warmup))
    return lines


def render_latency(summary: LatencySummary) -> str:
    """``str(LatencySummary)``: runs, mean, quantiles, max, the p99 interval, preempted runs
    and the warnings, one per line.

    >>> from pyfxprof.data.latency import latency_summary
    >>> render_latency(latency_summary([100, 200, 300])).splitlines()[:3]
    ['runs                 3', 'mean            200 ns', 'p50             200 ns']
    """
    rows = [("runs", str(summary.n)), ("mean", format_ns(summary.mean))]
    rows += [(name.replace("_", "."), format_ns(getattr(summary, name))) for name, _ in QUANTILES]
    low, high = summary.p99_ci
    rows += [("max", format_ns(summary.max)),
             (f"p99 {CONFIDENCE:.0%} CI", f"{format_ns(low) if low is not None else '?'} – "
              f"{format_ns(high) if high is not None else 'unbounded (too few runs)'}")]
    if summary.preempted is not None:
        rows.append(("preempted", f"{summary.preempted} of {summary.n + summary.excluded} runs"
                     + (" (excluded)" if summary.excluded else "")))
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value:>10}" for name, value in rows]
    return "\n".join(lines + [f"warning: {text}" for text in summary.warnings])


def render_warmup(report: WarmupReport) -> str:
    """``str(WarmupReport)``: one line on the warm-up runs, the untimed ones and drift.

    >>> from pyfxprof.data.warmup import WarmupReport
    >>> render_warmup(WarmupReport(3, 1_000_000, 4_200_000, None, 10, 14))
    'warm-up: the first 3 timed runs are slower (together 4.20 ms above steady 1.00 ms); use warmup >= 14'
    """
    if report.runs:
        text = (f"warm-up: the first {report.runs} timed runs are slower (together "
                f"{format_ns(report.excess_ns)} above steady {format_ns(report.steady_ns)})")
        if report.needed is not None:
            text += f"; use warmup >= {report.needed}"
    else:
        text = f"warm-up: steady from the first timed run ({format_ns(report.steady_ns)})"
        if report.warmup_runs_slow is not None:
            text += (f"; {report.warmup_runs_slow} of the {report.warmup} untimed warm-up runs "
                     "were slow")
        elif report.warmup_runs_preempted:
            text += (f"; {report.warmup_runs_preempted} of the {report.warmup} untimed warm-up "
                     "runs were preempted, too many to tell how many were slow")
    if report.drift is not None:
        text += f"; steady runs drift (Spearman rho {report.drift:+.2f})"
    return text


def render_tail(frame: pd.DataFrame, top: int | None = 20) -> str:
    """The tail frame (Profile.tail) as aligned text with a one-line heading (auto units).

    >>> from pyfxprof.data.tail import tail_attribution
    >>> frame = tail_attribution(["a"], np.array([[10], [40]]), np.array([10, 40]), 0.9)
    >>> print(render_tail(frame))  # doctest: +NORMALIZE_WHITESPACE
    tail at q=0.9: 1 tail run of 2 (shares of the tail runs' excess; var share: of the variance of the total)
    Node             Median    Tail  Excess   Share  Var share
    a                 25 ns   40 ns   15 ns  100.0%     100.0%
    (between nodes)    0 ns    0 ns    0 ns    0.0%       0.0%
    """
    shown = frame if top is None else frame.head(top)
    count = frame.attrs.get("tail_runs", "?")
    heading = (f"tail at q={frame.attrs.get('quantile', '?')}: {count} tail "
               f"run{'' if count == 1 else 's'} of {frame.attrs.get('runs', '?')} (shares of the "
               "tail runs' excess; var share: of the variance of the total)")
    columns = [shown[c] for c in ("name", "median", "tail", "excess", "share", "var_share")]
    rows = [[str(name), format_ns(median), format_ns(tail), format_ns(excess),
             format_pct(100 * share), format_pct(100 * var_share)]
            for name, median, tail, excess, share, var_share in zip(*columns)]
    lines = [heading] + _aligned(["Node", "Median", "Tail", "Excess", "Share", "Var share"], rows)
    if top is not None and len(frame) > top:
        lines.append(f"... {len(frame) - top} more rows")
    return "\n".join(lines)


def render_sweep(result: SweepResult, top: int | None = 20) -> str:
    """``SweepResult.render`` (and ``str()``): the fit table as aligned text with a heading.

    >>> print(pyfxprof.sweep(model, make_inputs).render(top=5))  # doctest: +SKIP
    """
    frame = result.table()
    shown = frame if top is None else frame.head(top + 1)
    titles = ["Node", "Fixed", "Per item", "R²", "Fixed % at 1", "Overhead-bound"] + [
        f"@{size}" for size in result.sizes]
    rows = [[str(r["name"]), format_ns(r["fixed_ns"]), format_ns(r["per_item_ns"]),
             "-" if np.isnan(r["r2"]) else f"{r['r2']:.3f}",
             format_pct(100 * r["fixed_share_at_1"]),
             "yes" if r["overhead_bound"] else ""]
            + [format_ns(r[f"median_at_{size}"]) for size in result.sizes]
            for _, r in shown.iterrows()]
    bound = int(frame["overhead_bound"][1:].sum())
    lines = [f"sweep over sizes {', '.join(map(str, result.sizes))}: Theil–Sen fit of each "
             f"node's median, time = fixed + per item x size; {bound} of {len(frame) - 1} "
             "nodes overhead-bound at size 1"] + _aligned(titles, rows)
    if top is not None and len(frame) > top + 1:
        lines.append(f"... {len(frame) - top - 1} more nodes")
    if result.missing:
        lines.append(f"left out (not at every size): {', '.join(result.missing[:10])}")
    return "\n".join(lines + _preemption_notes(result))


def _preemption_notes(result) -> list[str]:
    notes = []
    for size, profile in result.profiles.items():
        noise = profile.noise()
        count = 0 if noise is None else int(noise["preempted"].sum())
        if count:
            used = ("left out" if count < profile.n_runs / 2
                    else "used the half of the runs least time off the CPU")
            notes.append(f"size {size}: {count} of {profile.n_runs} runs preempted ({used})")
    return notes
