"""The environment a profile was taken in: versions, CPU, threads, clock, time stamp."""

from __future__ import annotations

import datetime
import os
import platform
import sys

import torch

from .. import __version__, _C


def cpu_name() -> str:
    """The CPU model name, from /proc/cpuinfo where available."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment_meta() -> dict:
    """Versions, CPU, logical cores, torch threads, clock and a UTC time stamp.

    Example:
        >>> sorted(environment_meta())[:4]
        ['argv', 'clock', 'cores', 'cpu']
    """
    clock = _C.clock_info()
    return {
        "versions": {"pyfxprof": __version__, "torch": torch.__version__,
                     "python": platform.python_version(), "numpy": _numpy_version()},
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "clock": {"name": clock["name"], "resolution_ns": clock["resolution_ns"],
                  "read_cost_ns": clock["read_cost_ns"], "tsc_hz": clock["tsc_hz"]},
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "argv": list(sys.argv[1:]) if sys.argv and "pyfxprof" in sys.argv[0] else [],
    }


def _numpy_version() -> str:
    import numpy
    return numpy.__version__
