"""pyfxprof: a high-precision, low-overhead per-node profiler for PyTorch models.

Example:
    >>> import torch, pyfxprof
    >>> model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    >>> prof = pyfxprof.profile(model, (torch.randn(4, 8),), runs=5, warmup=1)
    >>> print(prof.table(sort_by="total", top=20))  # doctest: +SKIP
"""

__version__ = "0.1.0"

from .analyses.advisor import Advice, Suggestion, advise, register_rule
from .analyses.diff import ProfileDiff, diff
from .errors import PyfxprofError
from .tools.fusion import FusionError, FusionReport, fuse_conv_bn, max_abs_difference
from .tools.fusion_bench import FusionBenchmark, benchmark_fusion
from .timing.interpreter import ProfilingInterpreter
from .run.loop import Profiler
from .data.persist import load_profile
from .data.profile import Profile
from .run.ranges import Range as range  # noqa: A001 (pyfxprof.range, like torch.profiler's record_function)
from .run.runner import profile
from .run.schedule import ProfilerAction, schedule

#: Load a profile saved with Profile.save (versioned JSON, optionally gzip).
load = load_profile

__all__ = [
    "Advice", "FusionBenchmark", "FusionError", "FusionReport", "Profile", "ProfileDiff",
    "Profiler", "ProfilerAction", "ProfilingInterpreter", "PyfxprofError", "Suggestion", "advise",
    "benchmark_fusion", "diff", "fuse_conv_bn", "load", "max_abs_difference", "profile", "range",
    "register_rule", "schedule",
]
