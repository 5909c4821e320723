"""The last-level cache of a device: what a cold replay and the triad's arrays must exceed."""

from __future__ import annotations

from pathlib import Path

import torch


def last_level_cache_bytes(device: torch.device,
                           root: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The device's last-level cache: the GPU's L2, or the largest CPU cache sysfs lists
    under `root` (0 when unknown).

    Example:
        >>> last_level_cache_bytes(torch.device("cpu"), root="/nonexistent")
        0
    """
    if device.type == "cuda":
        return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
    sizes = []
    for entry in Path(root).glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes, default=0)
