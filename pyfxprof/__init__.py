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

__version__ = "0.1.0"

#: Public name -> (module under pyfxprof, attribute of that module).
_PUBLIC = {
    "Advice": ("analyses.advisor", "Advice"),
    "BoundInputs": ("capture.inputs", "BoundInputs"),  # positional and keyword inputs at once
    "CaptureOptions": ("run.arguments", "CaptureOptions"),  # profile()'s capture keywords
    "Compare": ("data.bench_compare", "Compare"),  # Measurements as one grid
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
    "Suggestion": ("analyses.advisor", "Suggestion"),
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
    "max_abs_difference": ("tools.fusion", "max_abs_difference"),
    "profile": ("run.runner", "profile"),
    "range": ("loop.ranges", "Range"),  # like torch.profiler's record_function
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
    "Profile.export": ("views.exporters", "export"),
    "Profile.key_averages": ("views.key_averages", "key_averages"),
    "Profile.events": ("views.key_averages", "events"),
    "Profile.export_memory_timeline": ("views.memory_timeline", "export_memory_timeline"),
    "Profile.plot": ("views.plot", "plot"),
    "Profile.plot_latency": ("views.latency_plots", "plot_latency"),
    "Profile.plot_tail": ("views.latency_plots", "plot_tail"),
    "Profile.advise": ("analyses.advisor", "advise"),
    "Profile.save": ("data.persist", "save_profile"),
    "Profile.python_outside": ("data.outside_graph", "python_functions"),
    "RankProfiles.table": ("views.rank_table", "render_rank_table"),
    "RankProfiles.export_html": ("views.rank_table", "export_rank_report_html"),
    "RankProfiles.export_chrome_trace": ("views.rank_trace", "export_chrome_trace"),
    "RankProfiles.export_rank_traces": ("views.rank_trace", "export_rank_traces"),
    "SweepResult.plot": ("views.latency_plots", "plot_sweep"),
    "SweepResult.render": ("views.latency_text", "render_sweep"),
    "LatencySummary.__str__": ("views.latency_text", "render_latency"),
    "WarmupReport.__str__": ("views.latency_text", "render_warmup"),
    "Advice._repr_html_": ("views.html_report", "advice_html"),
    "Measurement.__str__": ("views.bench_text", "render_measurement"),
    "Measurement.__repr__": ("views.bench_text", "measurement_repr"),
    "Measurement._repr_html_": ("views.bench_text", "measurement_html"),
    "Compare.__str__": ("views.bench_text", "render_compare"),
    "Compare._repr_html_": ("views.bench_text", "compare_html"),
}

__all__ = sorted(_PUBLIC)


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


def served_methods(cls: type) -> type:
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
    """Import the module behind a public name on first use, then keep the name here."""
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = _attribute(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
