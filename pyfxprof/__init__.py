"""pyfxprof: a high-precision, low-overhead per-node profiler for PyTorch models.

The public names are served lazily (PEP 562): ``import pyfxprof`` imports neither torch nor the
native extension ``pyfxprof._C``; ``pyfxprof.profile`` imports the run stage on first use, while
``pyfxprof.load(path).table()`` needs only numpy and pandas. To add a public name, add one line
to ``_PUBLIC`` below: ``"name": ("subpackage.module", "attribute")``.

Example:
    >>> import torch, pyfxprof
    >>> model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    >>> prof = pyfxprof.profile(model, (torch.randn(4, 8),), runs=5, warmup=1)
    >>> print(prof.table(sort_by="total", top=20))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: Public name -> (module under pyfxprof, attribute of that module).
_PUBLIC = {
    "Advice": ("analyses.advisor", "Advice"),
    "BoundInputs": ("capture.inputs", "BoundInputs"),  # positional and keyword inputs at once
    "FusionBenchmark": ("tools.fusion_bench", "FusionBenchmark"),
    "FusionError": ("tools.fusion", "FusionError"),
    "FusionReport": ("tools.fusion", "FusionReport"),
    "Profile": ("data.profile", "Profile"),
    "ProfileDiff": ("analyses.diff", "ProfileDiff"),
    "Profiler": ("run.loop", "Profiler"),
    "ProfilerAction": ("run.schedule", "ProfilerAction"),
    "ProfilingInterpreter": ("timing.interpreter", "ProfilingInterpreter"),
    "PyfxprofError": ("errors", "PyfxprofError"),
    "RankProfiles": ("data.rank_profiles", "RankProfiles"),
    "Suggestion": ("analyses.advisor", "Suggestion"),
    "advise": ("analyses.advisor", "advise"),
    "benchmark_fusion": ("tools.fusion_bench", "benchmark_fusion"),
    "diff": ("analyses.diff", "diff"),
    "fuse_conv_bn": ("tools.fusion", "fuse_conv_bn"),
    "gather": ("run.distributed", "gather"),  # every rank's Profile on one rank
    "load": ("data.persist", "load_profile"),  # a profile saved by Profile.save (JSON, gzip)
    "load_rank_profiles": ("data.rank_profiles", "load_rank_profiles"),
    "max_abs_difference": ("tools.fusion", "max_abs_difference"),
    "profile": ("run.runner", "profile"),
    "range": ("run.ranges", "Range"),  # like torch.profiler's record_function
    "register_rule": ("analyses.advisor", "register_rule"),
    "schedule": ("run.schedule", "schedule"),
    "sweep": ("run.sweep", "sweep"),  # profiles at several batch sizes, fixed vs per-item cost
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    """Import the module behind a public name on first use, then keep the name here."""
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
