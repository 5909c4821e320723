"""One-line description of the machine a benchmark ran on, printed above every result table."""

import os
import platform

import torch

from pyfxprof import _C
from pyfxprof.run.metadata import cpu_name


def describe_machine() -> str:
    """CPU, cores, load, clock, Python and torch versions, torch threads."""
    clock = _C.clock_info()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"machine: {cpu_name()}, {os.cpu_count()} cores, load {load:.2f} · clock "
            f"{clock['name']} (resolution {clock['resolution_ns']:.0f} ns, read "
            f"{clock['read_cost_ns']:.1f} ns) · Python {platform.python_version()} · "
            f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
