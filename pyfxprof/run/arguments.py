"""profile()'s arguments: its option groups (CaptureOptions, TimingOptions, whose defaults are
profile()'s), checked in one place and resolved into what the run needs (the model to run,
placed on its device, and whether to time on the device)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterable

import torch

from ..capture.exported import exported_module, is_exported
from ..capture.inductor import is_aoti_model, is_compiled
from ..capture.ladder import check_model
from ..capture.placement import device_of, place_on_device
from ..errors import PyfxprofError
from ..timing.device_events import ensure_cuda_runtime
from ..timing.executors import MODES
from .profiler_keywords import torch_profiler_keywords


@dataclass(frozen=True)
class CaptureOptions:
    """How profile() captures the model and what its one untimed analysis run records
    (docs/capture.md, docs/profile.md); profile()'s keywords of the same names default to
    these fields.

    capture: "auto" (the ladder) or one forced rung; granularity: "function" or "aten"
    (dynamo); leaf_modules, autowrap_functions, concrete_args: passed to the FX tracer;
    library_frames: keep torch's and transformers' frames in `source` lines; profile_memory:
    each node's allocated, freed and peak bytes.

    Example:
        >>> import pyfxprof
        >>> fx_only = pyfxprof.CaptureOptions(capture="fx")
        >>> prof = pyfxprof.profile(torch.nn.ReLU(), (torch.ones(2),), runs=2, warmup=0,
        ...                         capture_options=fx_only, progress=False)
        >>> prof.meta["capture_mode"]
        'fx'
    """

    capture: str = "auto"
    granularity: str = "function"
    leaf_modules: Iterable = ()
    autowrap_functions: Iterable = ()
    concrete_args: dict | None = None
    library_frames: bool = False
    profile_memory: bool = False


@dataclass(frozen=True)
class TimingOptions:
    """How profile() times the captured graph (docs/profile.md, docs/gpu.md); profile()'s
    keywords of the same names default to these fields.

    mode: "codegen" (one native call per node, recompiled) or "interpreter"; device: run on
    this device ("cuda", "cuda:1", "cpu"; a model elsewhere is profiled as a moved copy),
    None: where the model is; device_events: also time each node with CUDA events (None: on
    for CUDA models); nvtx: an NVTX range per node.

    Example:
        >>> import pyfxprof
        >>> prof = pyfxprof.profile(torch.nn.ReLU(), (torch.ones(2),), runs=2, warmup=0,
        ...     timing_options=pyfxprof.TimingOptions(mode="interpreter"), progress=False)
        >>> prof.meta["mode"]
        'interpreter'
    """

    mode: str = "codegen"
    device: str | None = None
    device_events: bool | None = None
    nvtx: bool = False


#: The groups' defaults, which profile()'s signature reads (each default spelled once).
CAPTURE, TIMING = CaptureOptions(), TimingOptions()


@dataclass(frozen=True)
class Arguments:
    """profile()'s arguments after checking: the option groups and the rest as given."""

    model: Any
    example_inputs: Any
    runs: int
    warmup: int | str  # a count, or "auto" (run/timed_runs.py)
    grad: bool
    name: str | None
    progress: bool
    compile: bool | dict | None
    backward: bool
    loss_fn: Callable | None
    capture: CaptureOptions
    timing: TimingOptions

    @property
    def compiled(self) -> bool:
        """Whether the compiled path (run/compiled_profile.py, run/aoti.py) profiles it."""
        return (is_compiled(self.model) or is_aoti_model(self.model)
                or self.compile not in (None, False))


def _grouped(group: Any, given: Any, keywords: dict) -> Any:
    """`given` (a group of `group`'s type, or None) with `keywords` (profile()'s keywords of
    the group's fields) set where they differ from the defaults; one line when both say."""
    if given is None:
        return replace(group, **{f.name: keywords[f.name] for f in fields(group)})
    if not isinstance(given, type(group)):
        raise PyfxprofError(f"expected a pyfxprof.{type(group).__name__}, got "
                            f"{type(given).__name__}")
    both = [f.name for f in fields(group) if keywords[f.name] is not getattr(group, f.name)
            and keywords[f.name] != getattr(group, f.name)]
    if both:
        raise PyfxprofError(f"give {', '.join(both)} either as a keyword or in "
                            f"{type(group).__name__}, not both")
    return given


def checked(model: Any, example_inputs: Any, runs: int, warmup: int | str, *, grad: bool,
            name: str | None, progress: bool, compile: bool | dict | None, backward: bool,
            loss_fn: Callable | None, capture_options: CaptureOptions | None,
            timing_options: TimingOptions | None, torch_profiler_options: dict,
            **keywords: Any) -> Arguments:
    """profile()'s arguments grouped (the groups' fields from its keywords, torch.profiler's
    ``activities`` setting device_events: run/profiler_keywords.py) and the model to run (an
    ExportedProgram's module, docs/capture.md), or a one-line error for arguments profile()
    cannot take."""
    if model is None:  # a torch.profiler habit: `with profile(...) as p:`
        raise PyfxprofError("pyfxprof.profile(model, inputs) times a model and returns a "
                            "Profile (no model); for `with ... as p:` loops like torch.profiler "
                            "use `with pyfxprof.Profiler(model, schedule=...) as p:`")
    capture = _grouped(CAPTURE, capture_options, keywords)
    timing = _grouped(TIMING, timing_options, keywords)
    model = exported_module(model)
    timing = replace(timing, device_events=torch_profiler_keywords(torch_profiler_options,
                                                                   timing.device_events))
    if backward and is_exported(model):
        raise PyfxprofError("backward=True needs the eager model: an exported program is an "
                            "inference graph; profile the nn.Module it was exported from")
    if not is_aoti_model(model):
        check_model(model)
    if timing.mode not in MODES:
        raise PyfxprofError(f"mode must be one of {', '.join(MODES)}, got {timing.mode!r}")
    if not isinstance(runs, int) or runs < 1:
        raise PyfxprofError(f"runs must be a positive integer, got {runs!r}")
    if warmup != "auto" and (not isinstance(warmup, int) or warmup < 0):
        raise PyfxprofError(f"warmup must be a non-negative integer or \"auto\", got "
                            f"{warmup!r}")
    return Arguments(model, example_inputs, runs, warmup, grad, name, progress, compile,
                     backward, loss_fn, capture, timing)


def placed(given: Arguments) -> tuple[torch.nn.Module, Arguments]:
    """(the user's own model, `given` with the model and inputs placed on timing.device: a
    copy moved there when elsewhere) with device_events resolved: as asked, else on for CUDA
    models; when on, the CUDA runtime must be usable."""
    model, example_inputs = place_on_device(given.model, given.example_inputs,
                                            given.timing.device)
    device_events = given.timing.device_events
    if device_events is None:
        inputs = example_inputs if isinstance(example_inputs, tuple) else ()
        device_events = device_of(model, inputs).startswith("cuda")
    if device_events:
        ensure_cuda_runtime()
    return given.model, replace(given, model=model, example_inputs=example_inputs,
                                timing=replace(given.timing, device_events=device_events))
