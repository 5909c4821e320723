"""``Profile.roofline`` on the user's side: a profile made on this machine without stored
peaks gets this machine's measured first (pyfxprof.machine_peaks: once per machine, cached),
at the profile's thread count; then views.roofline_text renders its roofline."""

from __future__ import annotations

import sys

import pandas as pd
import torch

from ..data.profile import Profile
from ..run.bench import thread_count
from ..run.machine_peaks import machine_peaks
from ..run.metadata import cpu_name
from ..run.peaks_cache import cache_path
from ..views.roofline_text import profile_roofline


def roofline(profile: Profile, group_by: str | None = None, depth: int = 1,
             peaks: dict | None = None) -> pd.DataFrame:
    """``Profile.roofline``: per node (``group_by="module"``: per module) the roofline's
    columns against `peaks` (default: the profile's own, ``meta["machine_peaks"]``). A
    profile without peaks that was made on this machine (its CPU, a device this process can
    use) gets them measured now, at its thread count (about ten seconds, once per machine:
    cached, see cache_path) and kept in its meta, so its plot and report show them too; a
    profile from elsewhere without peaks is a one-line error saying what to pass.

    Example:
        >>> frame = prof.roofline()  # doctest: +SKIP
        >>> frame[["bound", "efficiency"]].head(3)  # doctest: +SKIP
    """
    if peaks is None and not isinstance(profile.meta.get("machine_peaks"), dict) \
            and _made_here(profile.meta):
        print(f"pyfxprof: measuring this machine's peaks once (about ten seconds; cached in "
              f"{cache_path()})", file=sys.stderr)
        with thread_count(profile.meta.get("threads")):
            profile.meta["machine_peaks"] = machine_peaks(profile.meta.get("device"))
    return profile_roofline(profile, group_by, depth, peaks)


def _made_here(meta: dict) -> bool:
    """Whether this process can measure the peaks of the machine a profile's `meta` names:
    the same CPU, a CPU profile or a CUDA device this process has, a whole thread count."""
    device, threads = str(meta.get("device") or "cpu"), meta.get("threads")
    usable = device == "cpu" or (device.startswith("cuda") and torch.cuda.is_available())
    return (usable and meta.get("cpu") == cpu_name()
            and (threads is None or (isinstance(threads, int) and threads > 0)))
