"""The roofline as text: the line naming the peaks, the header of ``Profile.roofline``'s
frame (served from here: data/roofline.py computes the frame) and its columns as table cells
(`pyfxprof profile --roofline`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.profile import Profile
from ..data.roofline import WAIT_SHARE, roofline
from ..data.units import format_flops, format_ns


def peaks_text(peaks: dict) -> str:
    """One line naming the peaks: GEMM FLOP/s per dtype, triad bandwidth, the first touch of
    fresh outputs (when measured), when measured.

    Example:
        >>> peaks_text({"flops": {"float32": 1.5e11}, "bandwidth": 2e10,
        ...             "measured_at": "2026-12-07T06:00:00+00:00", "threads": 2})
        'peaks measured 2026-12-07T06:00:00+00:00 (2 threads): GEMM float32 150 GFLOP/s · triad 20.0 GB/s'
        >>> peaks_text({"flops": {}, "bandwidth": 2e10, "first_touch_bytes": 32 << 20,
        ...             "first_touch_ns_per_byte": 0.9}).split(" · ")[-1]
        'first touch of fresh outputs 0.9 ns/byte (every call from 33.6 MB)'
        >>> peaks_text({"flops": {}, "bandwidth": 2e10, "waited_for_cores": ["triad"]})[-44:]
        'triad measured while waiting for cores (low)'
    """
    rates = " · ".join(f"GEMM {name} {format_flops(rate, 'FLOP/s')}"
                       for name, rate in peaks["flops"].items() if rate)
    touch = (f" · first touch of fresh outputs {peaks['first_touch_ns_per_byte']:.2g} ns/byte "
             f"(every call from {format_flops(peaks['first_touch_bytes'], 'B')})"
             if peaks.get("first_touch_bytes") and peaks.get("first_touch_ns_per_byte") else "")
    waited = (f" · {', '.join(peaks['waited_for_cores'])} measured while waiting for cores "
              "(low)" if peaks.get("waited_for_cores") else "")
    return (f"peaks measured {peaks.get('measured_at', '?')} ({peaks.get('threads', '?')} "
            f"threads): {rates} · triad {format_flops(peaks['bandwidth'], 'B/s')}{touch}"
            f"{waited}")


def profile_roofline(profile: Profile, group_by: str | None = None, depth: int = 1,
                     peaks: dict | None = None) -> pd.DataFrame:
    """``Profile.roofline``: data/roofline.py's frame (its docstring says each column) with
    ``attrs["header"]``, one line naming the peaks and what the rows would take at the roofs.

    Example:
        >>> frame = prof.roofline()  # doctest: +SKIP
        >>> print(frame.attrs["header"])  # doctest: +SKIP
    """
    frame = roofline(profile, group_by, depth, peaks)
    attrs, unknown = frame.attrs, frame.attrs["unknown_rows"]
    attrs["header"] = (
        f"roofline: {peaks_text(attrs['peaks'])}; at the roofs the rows would take "
        f"{format_ns(attrs['total_roof_ns'])} of their {format_ns(attrs['total_median_ns'])} "
        f"(headroom {format_ns(attrs['total_headroom_ns'])}); bytes are a lower bound"
        + (f"; {unknown} rows ran ops without a FLOP formula (unknown_ops)" if unknown else "")
        + conditions_text(attrs.get("core_wait_share"), attrs["peaks"].get("threads"),
                          profile.meta.get("threads")))
    return frame


def conditions_text(share: float | None, peak_threads: int | None,
                    threads: int | None) -> str:
    """What makes the efficiencies no measure of the ops, for the header: runs that waited
    for cores (`share` of a median run, data.roofline.core_wait_share, at WAIT_SHARE or
    more), peaks measured at another thread count than the profile's; "" when neither.

    Example:
        >>> conditions_text(1.3, 2, 2)[:60]
        "; the runs' threads waited for a core 130% of a median run ("
        >>> conditions_text(0.01, 2, 1)
        '; the peaks were measured at 2 threads, the profile ran at 1'
    """
    text = ""
    if share is not None and share >= WAIT_SHARE:
        text += (f"; the runs' threads waited for a core {share:.0%} of a median run (summed "
                 "over threads: more runnable threads than free cores): the efficiencies are "
                 "partly the scheduler's, lower bounds of the ops' (column waited); profile "
                 "with fewer threads than free cores, or on a quieter machine")
    if peak_threads and threads and peak_threads != threads:
        text += f"; the peaks were measured at {peak_threads} threads, the profile ran at {threads}"
    return text


#: The roofline's columns a table shows (Profile.table's node view with them: the CLI's
#: `pyfxprof profile --roofline`), as text.
#: ``flops_all`` is the roofline's FLOP count (matrix and vector FLOPs), beside the table's
#: ``flops`` (matrix FLOPs only).
TABLE_COLUMNS = ("flops_all", "flops_per_s", "bytes", "intensity", "bytes_per_s", "bound",
                 "efficiency", "headroom")


def table_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """TABLE_COLUMNS of a roofline `frame` as text, with its ``name``: FLOPs, FLOP/s, bytes
    and bytes/s with SI prefixes, intensity in FLOP/byte, efficiency with its 95% interval, headroom
    as a duration.

    Example:
        >>> frame = pd.DataFrame({"name": ["mm"], "flops": [1.92e8], "flops_per_s": [9.6e10],
        ...     "bytes": [2e6], "intensity": [96.0], "bytes_per_s": [1e9],
        ...     "bound": ["compute"], "efficiency": [0.62], "efficiency_low": [0.55],
        ...     "efficiency_high": [0.7], "headroom": [1.2e6]})
        >>> table_columns(frame).iloc[0].tolist()[:3]
        ['mm', '192 MFLOP', '96.0 GFLOP/s']
        >>> table_columns(frame).iloc[0].tolist()[3:]
        ['2.00 MB', '96', '1.00 GB/s', 'compute', '0.62 [0.55, 0.70]', '1.20 ms']
    """
    def efficiency(row) -> str:
        if not np.isfinite(row.efficiency):
            return "-"
        return f"{row.efficiency:.2f} [{row.efficiency_low:.2f}, {row.efficiency_high:.2f}]"
    return pd.DataFrame({
        "name": frame["name"],
        "flops_all": [format_flops(v) for v in frame["flops"]],
        "flops_per_s": [format_flops(v, "FLOP/s") for v in frame["flops_per_s"]],
        "bytes": [format_flops(v, "B") for v in frame["bytes"]],
        "intensity": [f"{v:.3g}" if np.isfinite(v) else "-" for v in frame["intensity"]],
        "bytes_per_s": [format_flops(v, "B/s") for v in frame["bytes_per_s"]],
        "bound": frame["bound"],
        "efficiency": [efficiency(row) for row in frame.itertuples()],
        "headroom": [format_ns(v) if np.isfinite(v) else "-" for v in frame["headroom"]]})
