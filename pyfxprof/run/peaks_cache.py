"""The cache file of measured machine peaks (run.machine_peaks): where it is, the key of a
machine, and reading it without measuring (what profile() puts in its meta)."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import torch

#: The cache file's format: a file of another version is measured again (its peaks lack
#: what this version measures: version 2 lacked ``first_touch_faults_per_page``, which a
#: roofline would take as 1 fault per page).
CACHE_VERSION = 3
#: Environment variable naming the cache directory (default ~/.cache/pyfxprof).
CACHE_ENV = "PYFXPROF_CACHE_DIR"


def cache_path() -> Path:
    """The cache file of measured peaks: $PYFXPROF_CACHE_DIR/machine_peaks.json, else
    ~/.cache/pyfxprof/machine_peaks.json.

    Example:
        >>> cache_path().name
        'machine_peaks.json'
    """
    root = os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "pyfxprof"
    return Path(root) / "machine_peaks.json"


def machine_key(device: torch.device, cpu: str) -> str:
    """What peaks hold for: host, the processor (the GPU's name on CUDA, else `cpu`),
    device, torch threads and torch version.

    Example:
        >>> machine_key(torch.device("cpu"), "Some CPU").split(" | ")[1:3]
        ['Some CPU', 'cpu']
    """
    if device.type == "cuda" and device.index is None:  # "cuda" and "cuda:0" alike
        device = torch.device("cuda", torch.cuda.current_device())
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu
    return (f"{platform.node()} | {name} | {device} | threads={torch.get_num_threads()} | "
            f"torch {torch.__version__}")


def read_cache(path: Path) -> dict[str, Any]:
    """The cache file's machines (key -> peaks); empty when absent, unreadable or of another
    CACHE_VERSION."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {}
    machines = data.get("machines")
    return machines if isinstance(machines, dict) else {}


def cached_peaks(device: str, cpu: str) -> dict[str, Any] | None:
    """The peaks cached for `device` on this machine (processor `cpu`) at the current thread
    count, without measuring; None when never measured or for a device torch cannot name.

    Example:
        >>> peaks = cached_peaks("cpu", "Some CPU")
        >>> peaks is None or "bandwidth" in peaks
        True
    """
    try:
        place = torch.device(device)
        key = machine_key(place, cpu)
    except (RuntimeError, ValueError, AssertionError):
        return None
    return read_cache(cache_path()).get(key)
