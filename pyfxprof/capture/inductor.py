"""Capturing a torch.compile'd model per Inductor kernel: the user's compile settings (an
OptimizedModule's own, or profile(compile=...)'s), compiled again by Inductor with provenance
tracking through an inner compile that keeps each compiled graph with its Dynamo graph."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import torch
import torch.fx as fx

from ..errors import PyfxprofError, first_line
from .inputs import BoundInputs
from .torch_compat import isolated_compile_keywords, known_config, original_backend

if TYPE_CHECKING:
    from torch._dynamo.eval_frame import OptimizedModule

#: The Inductor setting added to the user's: comments naming each kernel call site and a
#: kernel -> source node mapping (generated code and kernels are otherwise the same).
PROVENANCE_CONFIG = {"trace.provenance_tracking_level": 1}
#: Keys profile(compile={...}) accepts, as torch.compile names them (its backend is Inductor).
COMPILE_KEYS = ("mode", "dynamic", "fullgraph", "options")


@dataclass
class CompileSettings:
    """What torch.compile was (or is to be) given: Inductor config patches (a mode's options
    included), `dynamic`, `fullgraph` (a graph break is an error), and where they came from
    (for the notes)."""

    config: dict
    dynamic: bool | None
    origin: str
    fullgraph: bool = False

    def describe(self) -> str:
        """One line for the Profile's notes.

        Example:
            >>> settings = CompileSettings({"max_autotune": True}, None, "profile(compile=...)")
            >>> settings.describe()  # doctest: +NORMALIZE_WHITESPACE
            "inductor from profile(compile=...) (options {'max_autotune': True}, dynamic=None,
             fullgraph=False)"
        """
        return (f"inductor from {self.origin} (options {self.config}, dynamic={self.dynamic}, "
                f"fullgraph={self.fullgraph})")


def is_compiled(model: Any) -> TypeGuard[OptimizedModule]:
    """True for a module torch.compile returned (an OptimizedModule).

    Example:
        >>> is_compiled(torch.nn.ReLU())
        False
    """
    if "torch._dynamo" not in sys.modules:  # nothing was compiled; don't load Dynamo to know
        return False
    return isinstance(model, torch._dynamo.eval_frame.OptimizedModule)


def is_aoti_model(model: Any) -> bool:
    """True for a model torch._inductor.aoti_load_package returned (an AOTICompiledModel).

    Example:
        >>> is_aoti_model(torch.nn.ReLU())
        False
    """
    return type(model).__name__ == "AOTICompiledModel" and hasattr(model, "loader")


def compile_settings(model: torch.nn.Module, compile: Any) -> tuple[torch.nn.Module,
                                                                    CompileSettings | None]:
    """(the eager module to compile, its settings), or (model, None) when nothing is compiled.

    An OptimizedModule gives its `_orig_mod` and the options it was compiled with;
    `compile` True or a dict with keys of COMPILE_KEYS compiles an eager model.

    Example:
        >>> module, settings = compile_settings(torch.nn.ReLU(), {"mode": "max-autotune"})
        >>> settings.config["max_autotune"]
        True
    """
    if is_compiled(model):
        if compile not in (None, False, True):
            raise PyfxprofError("the model is already torch.compile'd: its own options are used; "
                                "pass compile= only with an eager model")
        return model._orig_mod, _settings_of(model)
    if compile is None or compile is False:
        return model, None
    options = {} if compile is True else compile
    if not isinstance(options, dict) or set(options) - set(COMPILE_KEYS):
        raise PyfxprofError(f"compile= takes True or a dict with keys {', '.join(COMPILE_KEYS)}, "
                            f"got {compile!r}")
    try:
        wrapper = torch._TorchCompileInductorWrapper(options.get("mode"), options.get("options"),
                                                     options.get("dynamic"))
    except (RuntimeError, TypeError, KeyError) as error:
        raise PyfxprofError(f"compile options rejected by Inductor: {first_line(error)}") from None
    fullgraph = options.get("fullgraph", False)
    if not isinstance(fullgraph, bool):
        raise PyfxprofError(f"compile={{'fullgraph': ...}} must be True or False, got "
                            f"{fullgraph!r}")
    return model, CompileSettings(dict(wrapper.config), wrapper.dynamic, "profile(compile=...)",
                                  fullgraph)


def _settings_of(optimized: OptimizedModule) -> CompileSettings:
    """The Inductor settings an OptimizedModule was compiled with (the backend found at the
    end of Dynamo's `_torchdynamo_orig_backend` chain); other backends are refused."""
    backend = original_backend(optimized.dynamo_ctx.callback)
    if not isinstance(backend, torch._TorchCompileInductorWrapper):
        name = getattr(backend, "__name__", type(backend).__name__)
        raise PyfxprofError(f"per-kernel profiling needs torch.compile's inductor backend, this "
                            f"model was compiled with {name!r}; profile its _orig_mod eagerly or "
                            "compile it with backend='inductor'")
    return CompileSettings(dict(backend.config), backend.dynamic, "the torch.compile'd model",
                           bool(getattr(optimized.dynamo_ctx, "fullgraph", False)))


@dataclass
class CompiledGraph:
    """One graph Inductor compiled: the Dynamo graph (source nodes with modules and stack
    traces), the post-grad aten graph and the compiled output (a CompiledFxGraph)."""

    index: int
    dynamo_gm: fx.GraphModule
    aten_gm: fx.GraphModule
    output: Any


@dataclass
class InductorCapture:
    """`module` compiled by Inductor with `settings` plus provenance tracking; `graphs` fills
    in as Dynamo compiles (at the first call, and again at each recompile).

    Example:
        >>> capture = InductorCapture(torch.nn.ReLU(), CompileSettings({}, None, "test"))
        >>> capture.graphs
        []
    """

    module: torch.nn.Module
    settings: CompileSettings
    graphs: list[CompiledGraph] = field(default_factory=list)

    def __post_init__(self) -> None:
        # (torch.compile of a module returns a module, an OptimizedModule; its stubs say
        # only "a callable")
        self.compiled: torch.nn.Module = cast(torch.nn.Module, torch.compile(
            self.module, backend=self._backend, dynamic=self.settings.dynamic,
            fullgraph=self.settings.fullgraph, **isolated_compile_keywords()))

    def _backend(self, gm: fx.GraphModule, example_inputs: list) -> Any:
        from torch._inductor.compile_fx import compile_fx
        provenance = known_config("torch._inductor.config", PROVENANCE_CONFIG)
        return compile_fx(gm, example_inputs, config_patches={**self.settings.config,
                                                              **provenance},
                          inner_compile=functools.partial(self._inner, gm))

    def _inner(self, dynamo_gm: fx.GraphModule, gm: fx.GraphModule, example_inputs: list,
               **kwargs: Any) -> Any:
        from torch._inductor.compile_fx import compile_fx_inner
        output = compile_fx_inner(gm, example_inputs, **kwargs)
        self.graphs.append(CompiledGraph(len(self.graphs), dynamo_gm, gm, output))
        return output

    def first_call(self, bound: BoundInputs) -> Any:
        """Compile (Dynamo and Inductor) by calling on `bound`; AOTAutograd's cache is off
        for it, as a hit there would skip the inner compile that keeps the graphs (Inductor's
        own FX graph cache still serves kernels compiled before)."""
        import torch._functorch.config as functorch_config
        try:
            with functorch_config.patch(enable_autograd_cache=False):
                output = bound.call(self.compiled)
        except PyfxprofError:
            raise
        except Exception as error:  # Dynamo / Inductor failed on the user's model
            raise PyfxprofError(f"torch.compile failed: {type(error).__name__}: "
                                f"{first_line(error)}") from None
        if not self.graphs:
            raise PyfxprofError("torch.compile produced no Inductor graph for these inputs (the "
                                "forward ran eagerly; after many compiles of the same code "
                                "Dynamo's recompile limit does that: torch._dynamo.reset())")
        return output
