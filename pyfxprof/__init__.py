"""pyfxprof: a high-precision, low-overhead per-node profiler for PyTorch models.

The public names are served lazily (PEP 562): ``import pyfxprof`` imports neither torch nor the
native extension ``pyfxprof._C``; ``pyfxprof.profile`` imports the run stage on first use, while
``pyfxprof.load(path).table()`` needs only numpy and pandas. To add a public name, add one line
to ``_PUBLIC`` below: ``"name": ("subpackage.module", "attribute")``.

The plain-data classes (Profile, RankProfiles, SweepResult, LatencySummary, WarmupReport,
Advice) import no view or analysis; their convenience methods (``prof.table()``,
``prof.export(...)``, ``str(prof.latency())``, ...) are served the same way, from ``_METHODS``:
``"Class.method": ("subpackage.module", "function")``, the function taking the instance
first. ``@served_methods`` on the class attaches them; the module is imported on the first
use of the method. docs/architecture.md says why.

Example:
    >>> import torch, pyfxprof
    >>> model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    >>> prof = pyfxprof.profile(model, (torch.randn(4, 8),), runs=5, warmup=1)
    >>> print(prof.table(sort_by="total", top=20))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import re
import sys
import warnings
from importlib import metadata
from typing import TYPE_CHECKING, TypeVar

__version__ = "0.1.0"
#: The oldest torch release pyfxprof supports (pyproject.toml's dependency; docs/versions.md).
TORCH_MINIMUM = (2, 8)


class UnsupportedTorch(ImportError):
    """The installed torch is older than TORCH_MINIMUM; uncaught, it prints its one line only."""


def _check_torch() -> None:
    """Refuse a torch below TORCH_MINIMUM in one line, read from torch's installed metadata
    (torch itself is not imported). Uncaught, the error prints that line without a traceback.

    Example:
        >>> _check_torch()  # the installed torch is supported
    """
    try:
        found = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return  # no torch: importing it later says so
    release = re.match(r"(\d+)\.(\d+)", found)
    if release is None or tuple(map(int, release.groups())) >= TORCH_MINIMUM:
        return
    needed = ".".join(map(str, TORCH_MINIMUM))
    previous = sys.excepthook

    def one_line(kind, error, traceback):
        if kind is UnsupportedTorch:
            print(f"{kind.__name__}: {error}", file=sys.stderr)
        else:
            previous(kind, error, traceback)
    sys.excepthook = one_line
    raise UnsupportedTorch(f"pyfxprof needs torch>={needed}, found torch {found}: upgrade it "
                           f"(pip install 'torch>={needed}')")


_check_torch()

if TYPE_CHECKING:  # what static tools (mypy, pyright, jedi) read; at run time _PUBLIC serves
    # the same names lazily (tests/test_typing.py checks the two agree)
    from .data.advice import Advice as Advice
    from .data.advice import Suggestion as Suggestion
    from .analyses.advisor import advise as advise
    from .analyses.advisor import register_rule as register_rule
    from .analyses.compiled_diff import CompiledDiff as CompiledDiff
    from .analyses.compiled_diff import kernel_table as kernel_table
    from .analyses.diff import ProfileDiff as ProfileDiff
    from .analyses.diff import diff as diff
    from .capture.inputs import BoundInputs as BoundInputs
    from .data.bench_compare import BenchGrid as BenchGrid
    from .data.bench_compare import BenchGrid as Compare  # deprecated (_DEPRECATED)
    from .data.measurement import Measurement as Measurement
    from .data.persist import load_profile as load
    from .data.profile import Profile as Profile
    from .data.rank_profiles import RankProfiles as RankProfiles
    from .data.rank_profiles import load_rank_profiles as load_rank_profiles
    from .errors import PyfxprofError as PyfxprofError
    from .loop.profiler import Profiler as Profiler
    from .loop.ranges import Range as range  # deprecated (_DEPRECATED)
    from .loop.ranges import Range as record_range
    from .loop.schedule import ProfilerAction as ProfilerAction
    from .loop.schedule import schedule as schedule
    from .run.bench import bench as bench
    from .run.bench import bench_grid as bench_grid
    from .run.compare import compare as compare
    from .run.machine_peaks import machine_peaks as machine_peaks
    from .run.distributed import gather as gather
    from .run.arguments import CaptureOptions as CaptureOptions
    from .run.arguments import TimingOptions as TimingOptions
    from .run.runner import profile as profile
    from .run.sweep import sweep as sweep
    from .timing.interpreter import ProfilingInterpreter as ProfilingInterpreter
    from .tools.fusion import FusionError as FusionError
    from .tools.fusion import FusionReport as FusionReport
    from .tools.fusion import fuse_conv_bn as fuse_conv_bn
    from .tools.fusion import max_abs_difference as max_abs_difference
    from .tools.fusion_bench import FusionBenchmark as FusionBenchmark
    from .tools.fusion_bench import benchmark_fusion as benchmark_fusion

#: Public name -> (module under pyfxprof, attribute of that module).
_PUBLIC = {
    "Advice": ("data.advice", "Advice"),
    "BoundInputs": ("capture.inputs", "BoundInputs"),  # positional and keyword inputs at once
    "BenchGrid": ("data.bench_compare", "BenchGrid"),  # Measurements as one grid
    "CaptureOptions": ("run.arguments", "CaptureOptions"),  # profile()'s capture keywords
    "CompiledDiff": ("analyses.compiled_diff", "CompiledDiff"),  # eager vs compiled, per module
    "FusionBenchmark": ("tools.fusion_bench", "FusionBenchmark"),
    "FusionError": ("tools.fusion", "FusionError"),
    "FusionReport": ("tools.fusion", "FusionReport"),
    "Measurement": ("data.measurement", "Measurement"),  # what bench() returns
    "Profile": ("data.profile", "Profile"),
    "ProfileDiff": ("analyses.diff", "ProfileDiff"),
    "Profiler": ("loop.profiler", "Profiler"),
    "ProfilerAction": ("loop.schedule", "ProfilerAction"),
    "ProfilingInterpreter": ("timing.interpreter", "ProfilingInterpreter"),
    "PyfxprofError": ("errors", "PyfxprofError"),
    "RankProfiles": ("data.rank_profiles", "RankProfiles"),
    "Suggestion": ("data.advice", "Suggestion"),
    "TimingOptions": ("run.arguments", "TimingOptions"),  # profile()'s timing keywords
    "advise": ("analyses.advisor", "advise"),
    "bench": ("run.bench", "bench"),  # microbenchmark of any callable
    "bench_grid": ("run.bench", "bench_grid"),
    "benchmark_fusion": ("tools.fusion_bench", "benchmark_fusion"),
    "compare": ("run.compare", "compare"),  # interleaved A/B: paired, FDR-controlled verdicts
    "diff": ("analyses.diff", "diff"),
    "fuse_conv_bn": ("tools.fusion", "fuse_conv_bn"),
    "gather": ("run.distributed", "gather"),  # every rank's Profile on one rank
    "kernel_table": ("analyses.compiled_diff", "kernel_table"),  # a compiled profile's kernels
    "load": ("data.persist", "load_profile"),  # a profile saved by Profile.save (JSON, gzip)
    "load_rank_profiles": ("data.rank_profiles", "load_rank_profiles"),
    "machine_peaks": ("run.machine_peaks", "machine_peaks"),  # measured roofs, cached
    "max_abs_difference": ("tools.fusion", "max_abs_difference"),
    "profile": ("run.runner", "profile"),
    "record_range": ("loop.ranges", "Range"),  # like torch.profiler's record_function
    "register_rule": ("analyses.advisor", "register_rule"),
    "schedule": ("loop.schedule", "schedule"),
    "sweep": ("run.sweep", "sweep"),  # profiles at several batch sizes, fixed vs per-item cost
}

#: "Class.method" -> (module under pyfxprof, function of it taking the instance first): the
#: methods upper stages serve to the plain-data classes of lower ones (see served_methods).
_METHODS = {
    "Profile.table": ("views.report", "profile_table"),
    "Profile.tree": ("views.report", "profile_tree"),
    "Profile._repr_html_": ("views.report", "profile_html"),
    "Profile.export": ("analyses.html_page", "export"),  # the registry; HTML with its advice
    "Profile.export_html": ("analyses.html_page", "export_html"),  # the report with its advice
    "Profile.export_chrome_trace": ("views.chrome_trace", "export_chrome_trace"),
    "Profile.export_stacks": ("views.stacks", "export_stacks"),
    "Profile.export_flamegraph": ("views.flamegraph", "export_flamegraph"),
    "Profile.export_speedscope": ("views.speedscope", "export_speedscope"),
    "Profile.key_averages": ("data.key_averages", "key_averages"),
    "Profile.events": ("data.key_averages", "events"),
    "KeyAverages.table": ("views.key_averages", "key_averages_table"),
    "Profile.export_memory_timeline": ("views.memory_timeline", "export_memory_timeline"),
    "Profile.plot": ("views.plot", "plot"),
    "Profile.plot_latency": ("views.latency_plots", "plot_latency"),
    "Profile.plot_tail": ("views.latency_plots", "plot_tail"),
    "Profile.advise": ("analyses.advisor", "advise"),
    "Profile.roofline": ("tools.roofline_peaks", "roofline"),  # per node vs measured peaks
    "Profile.replay": ("tools.replay", "replay"),  # a node alone, its variants
    "Profile.replay_script": ("tools.replay_script", "replay_script"),  # torch alone
    "Profile.save": ("data.persist", "save_profile"),
    "Profile.python_outside": ("data.outside_graph", "python_functions"),
    "RankProfiles.save": ("data.rank_files", "save_rank_profiles"),
    "RankProfiles.table": ("views.rank_table", "render_rank_table"),
    "RankProfiles.export_html": ("views.rank_table", "export_rank_report_html"),
    "RankProfiles.export_chrome_trace": ("views.rank_trace", "export_chrome_trace"),
    "RankProfiles.export_rank_traces": ("views.rank_trace", "export_rank_traces"),
    "SweepResult.plot": ("views.latency_plots", "plot_sweep"),
    "SweepResult.render": ("views.latency_text", "render_sweep"),
    "SweepResult.__str__": ("views.latency_text", "render_sweep"),
    "LatencySummary.__str__": ("views.latency_text", "render_latency"),
    "WarmupReport.__str__": ("views.latency_text", "render_warmup"),
    "Advice.__str__": ("views.advice_text", "render_advice"),
    "Advice._repr_html_": ("views.html_report", "advice_html"),
    "CompiledDiff.table": ("views.compiled_diff_text", "compiled_table"),
    "CompiledDiff.ops_table": ("views.compiled_diff_text", "compiled_ops_table"),
    "CompiledDiff.__repr__": ("views.compiled_diff_text", "compiled_repr"),
    "ProfileDiff.table": ("views.diff_text", "diff_table"),
    "ProfileDiff._repr_html_": ("views.diff_text", "diff_html"),
    "ProfileDiff.__repr__": ("views.diff_text", "diff_repr"),
    "ReplayResult.table": ("views.replay_text", "replay_table"),
    "ReplayResult.__str__": ("views.replay_text", "replay_table"),
    "ReplayResult._repr_html_": ("views.replay_text", "replay_html"),
    "Measurement.__str__": ("views.bench_text", "render_measurement"),
    "Measurement.__repr__": ("views.bench_text", "measurement_repr"),
    "Measurement._repr_html_": ("views.bench_text", "measurement_html"),
    "BenchGrid.__str__": ("views.bench_text", "render_bench_grid"),
    "BenchGrid._repr_html_": ("views.bench_text", "bench_grid_html"),
}
#: Old public name -> its new name: still served for one release, with a DeprecationWarning,
#: and left out of __all__ (``range`` would shadow the builtin under ``import *``).
_DEPRECATED = {"Compare": "BenchGrid", "range": "record_range"}

__all__ = sorted(_PUBLIC)
#: A class given to served_methods (returned as itself, so type checkers keep its type).
ServedClass = TypeVar("ServedClass", bound=type)


def _attribute(module: str, attribute: str):
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


class _ServedMethod:
    """A method of ``owner`` whose function lives in an upper stage: imported on first access,
    then set on ``owner`` in place of this descriptor (later calls are plain method calls)."""

    def __init__(self, owner: type, name: str):
        self.owner, self.name = owner, name

    def __get__(self, instance, owner=None):
        function = _attribute(*_METHODS[f"{self.owner.__name__}.{self.name}"])
        setattr(self.owner, self.name, function)
        return function if instance is None else function.__get__(instance, owner)


def served_methods(cls: ServedClass) -> ServedClass:
    """Class decorator: attach the methods ``_METHODS`` lists for ``cls`` (by class name).

    >>> from pyfxprof.data.profile import Profile
    >>> "table" in dir(Profile) and "export" in dir(Profile)
    True
    """
    prefix = cls.__name__ + "."
    for key in _METHODS:
        if key.startswith(prefix):
            name = key[len(prefix):]
            if name in vars(cls):
                raise TypeError(f"{cls.__name__}.{name} is both defined and served")
            setattr(cls, name, _ServedMethod(cls, name))
    return cls


def __getattr__(name: str):
    """Import the module behind a public name on first use, then keep the name here; an old
    name in _DEPRECATED warns and gives its new name's value (not kept, so it warns each time)."""
    if name in _DEPRECATED:
        warnings.warn(f"pyfxprof.{name} is deprecated and will be removed in the next release; "
                      f"use pyfxprof.{_DEPRECATED[name]}", DeprecationWarning, stacklevel=2)
        return __getattr__(_DEPRECATED[name])
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = _attribute(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
