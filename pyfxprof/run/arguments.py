"""The option groups (CaptureOptions, TimingOptions) that profile(), compare() and the Profiler
take, with their fields also as flat keywords (option_groups routes them), and profile()'s
arguments checked in one place and resolved into what the run needs (the model to run, placed
on its device, and whether to time on the device)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterable, Sequence

import torch

from ..capture.exported import exported_module, is_exported
from ..capture.inductor import is_aoti_model, is_compiled
from ..capture.ladder import check_model
from ..capture.placement import device_of, place_on_device
from ..errors import PyfxprofError
from ..timing.device_events import ensure_cuda_runtime
from ..timing.executors import MODES
from .alone import alone_rows
from .profiler_keywords import KEYWORDS, torch_profiler_keywords, unknown_keywords


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

    @property
    def tracer(self) -> tuple:
        """(leaf_modules, autowrap_functions, concrete_args): the FX tracer's options, as
        capture.ladder.prepare takes them."""
        return self.leaf_modules, self.autowrap_functions, self.concrete_args


@dataclass(frozen=True)
class TimingOptions:
    """How profile() times the captured graph (docs/profile.md, docs/gpu.md); profile()'s
    keywords of the same names default to these fields.

    mode: "codegen" (one native call per node, recompiled) or "interpreter"; device: run on
    this device ("cuda", "cuda:1", "cpu"; a model elsewhere is profiled as a moved copy),
    None: where the model is; device_events: also time each node with CUDA events (None: on
    for CUDA models); nvtx: an NVTX range per node; alone: time the nodes of the top rows
    alone after the runs (True: within a tenth of the profile's time; False: none; a list
    of node names or module paths: those), shown beside each row (docs/accuracy.md);
    profile() only (not the Profiler loop, compiled models or training steps).

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
    alone: bool | Sequence[str] = True


#: The groups' defaults (each default spelled once): profile()'s, compare()'s and the Profiler's.
CAPTURE, TIMING = CaptureOptions(), TimingOptions()
#: The option keywords: each group field's name -> its group's defaults.
FIELDS = {field.name: group for group in (CAPTURE, TIMING) for field in fields(group)}


def option_groups(keywords: dict, capture_options: CaptureOptions | None = None,
                  timing_options: TimingOptions | None = None, *,
                  taker: str = "pyfxprof.profile()", stacklevel: int = 3
                  ) -> tuple[CaptureOptions, TimingOptions]:
    """The option groups of a call of `taker` (profile(), compare() or the Profiler): the
    groups given (None: the defaults) with `keywords` set in them: each group field by its
    name (FIELDS), torch.profiler's KEYWORDS by their meaning (``activities`` sets
    device_events: run/profiler_keywords.py, its note pointing `stacklevel` frames up). A
    keyword neither of these, or one a given group sets otherwise, is a one-line error. A
    group given with no keyword for it is returned as it is (the same object).

    Example:
        >>> capture, timing = option_groups({"capture": "fx", "mode": "interpreter"})
        >>> capture.capture, timing.mode, timing == TimingOptions(mode="interpreter")
        ('fx', 'interpreter', True)
    """
    unknown = sorted(set(keywords) - set(FIELDS) - set(KEYWORDS))
    if unknown:
        raise unknown_keywords(taker, unknown, FIELDS)
    capture = _grouped(CAPTURE, capture_options, keywords)
    timing = _grouped(TIMING, timing_options, keywords)
    device_events = torch_profiler_keywords({key: keywords[key] for key in KEYWORDS
                                             if key in keywords}, timing.device_events,
                                            stacklevel + 1)
    if device_events is not timing.device_events:
        timing = replace(timing, device_events=device_events)
    return capture, timing


def _grouped(group: Any, given: Any, keywords: dict) -> Any:
    """`given` (a group of `group`'s type; None: `group`, the defaults) with `keywords` of its
    fields set; one line when a keyword and `given` set a field differently."""
    if given is None:
        given = group
    elif not isinstance(given, type(group)):
        raise PyfxprofError(f"expected a pyfxprof.{type(group).__name__}, got "
                            f"{type(given).__name__}")
    mine = {f.name: keywords[f.name] for f in fields(group) if f.name in keywords}
    if _same(given, group):
        return replace(given, **mine) if mine else given
    both = [name for name, value in mine.items() if not _same(value, getattr(group, name))
            and not _same(value, getattr(given, name))]
    if both:
        raise PyfxprofError(f"give {', '.join(both)} either as a keyword or in "
                            f"{type(group).__name__}, not both")
    return given


def _same(value: Any, other: Any) -> bool:
    """Whether two option values are the same (False where == has no truth value: tensors)."""
    try:
        return value is other or bool(value == other)
    except (RuntimeError, TypeError, ValueError):
        return False


@dataclass(frozen=True)
class Arguments:
    """profile()'s arguments: the option groups and the rest as given."""

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


def checked(given: Arguments) -> Arguments:
    """`given` with the model to run (an ExportedProgram's module, docs/capture.md), or a
    one-line error for arguments profile() cannot take."""
    model, timing = given.model, given.timing
    if model is None:  # a torch.profiler habit: `with profile(...) as p:`
        raise PyfxprofError("pyfxprof.profile(model, inputs) times a model and returns a "
                            "Profile (no model); for `with ... as p:` loops like torch.profiler "
                            "use `with pyfxprof.Profiler(model, schedule=...) as p:`")
    model = exported_module(model)
    if given.backward and is_exported(model):
        raise PyfxprofError("backward=True needs the eager model: an exported program is an "
                            "inference graph; profile the nn.Module it was exported from")
    if not is_aoti_model(model):
        check_model(model)
    if timing.mode not in MODES:
        raise PyfxprofError(f"mode must be one of {', '.join(MODES)}, got {timing.mode!r}")
    timing = replace(timing, alone=alone_rows(timing.alone))
    runs, warmup = given.runs, given.warmup
    if not isinstance(runs, int) or runs < 1:
        raise PyfxprofError(f"runs must be a positive integer, got {runs!r}")
    if warmup != "auto" and (not isinstance(warmup, int) or warmup < 0):
        raise PyfxprofError(f"warmup must be a non-negative integer or \"auto\", got "
                            f"{warmup!r}")
    return replace(given, model=model, timing=timing)


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
