"""Capturing a model without running it: a torch.fx trace with a profiling tracer, the leaf retry
(make the submodules that broke tracing leaves, by type once a type fails twice), module hooks,
and the whole model as one node. The ladder that orders them is pyfxprof.capture.ladder."""

from __future__ import annotations

import contextlib
import inspect
import linecache
import operator
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterable

import torch
import torch.fx as fx
import torch.fx.graph_module

from ..errors import PyfxprofError, first_line
from .collectives import bind_constants
from .functions import functions_kept_whole
from .inputs import Binder, BoundInputs, input_tensors
from .model_state import InPlaceGuard
from ..data.rungs import FX, FX_LEAF, HOOKS, RUNG, STATIC_MODES, WHOLE
from .source import uninteresting_files

#: Node ops that get timed; placeholders and the output are not work.
TIMED_OPS = ("call_module", "call_function", "call_method", "get_attr")
#: Retraces the leaf retry may try, each with one more submodule (or type) made a leaf.
MAX_LEAF_ATTEMPTS = 8
_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)


@contextlib.contextmanager
def fx_sources_released():
    """Forget the source torch.fx keeps for every graph compiled inside the block.

    Each recompile() stores the generated forward's source in torch.fx's loader and a lazy
    linecache entry (for tracebacks): a few KB per graph, kept for the process's life. A
    profile() call compiles several graphs, so a process profiling every N requests would
    grow without bound. Usable as a decorator.

    >>> with fx_sources_released():
    ...     _ = fx.symbolic_trace(torch.nn.ReLU())
    """
    loader = getattr(torch.fx.graph_module, "_loader", None)
    cache = getattr(loader, "eval_cache", None)
    before = set(cache) if isinstance(cache, dict) else set()
    try:
        yield
    finally:
        if isinstance(cache, dict):
            for key in [k for k in cache if k not in before]:
                cache.pop(key, None)
                linecache.cache.pop(key, None)


class CaptureFallbackWarning(UserWarning):
    """The model could not be captured by a plain FX trace; the message says what was done."""


#: Python's augmented assignments (``out += identity``): torch.fx's Proxy has none of these, so
#: Python falls back to the out-of-place operator and the graph would allocate a new tensor
#: where the model writes into its own. ProfilingTracer records them as the in-place operator.
IN_PLACE_OPERATORS = ("iadd", "iand", "ifloordiv", "ilshift", "imatmul", "imod", "imul", "ior",
                      "ipow", "irshift", "isub", "itruediv", "ixor")


class InPlaceProxy(fx.Proxy):
    """A Proxy whose augmented assignments record ``operator.iadd`` (and the other in-place
    operators) as the model runs them: in place on a tensor, a new value for an int or tuple,
    exactly Python's ``+=``."""


def _in_place(name: str):
    def record(self: fx.Proxy, other: Any) -> fx.Proxy:
        return self.tracer.create_proxy("call_function", getattr(operator, name), (self, other), {})
    record.__name__ = f"__{name}__"
    return record


for _name in IN_PLACE_OPERATORS:
    setattr(InPlaceProxy, f"__{_name}__", _in_place(_name))


def alias_before_in_place(graph: fx.Graph) -> None:
    """Keep every in-place node right in torch.fx's generated code, which writes
    ``x += y; iadd = x`` and so rebinds ``x``: when another node reads ``x`` after it, that
    node reads an alias taken just before (the same tensor, mutated as in the model; the old
    value of an int or tuple, as in the model).

    Example:
        >>> def f(x):
        ...     n = x.size(0)
        ...     total = n
        ...     total += 1
        ...     return x.new_zeros(n) + total
        >>> gm = fx.GraphModule(torch.nn.Module(), ProfilingTracer().trace(f))
        >>> gm(torch.zeros(2)).tolist()
        [3.0, 3.0]
    """
    in_place = {getattr(operator, name) for name in IN_PLACE_OPERATORS}
    for node in list(graph.nodes):
        first = node.args[0] if node.op == "call_function" and node.target in in_place else None
        later = [user for user in getattr(first, "users", ()) if node < user]
        if later:
            with graph.inserting_before(node):
                alias = graph.call_function(operator.getitem, ((first,), 0))
            alias.meta = dict(node.meta)
            for user in later:
                user.replace_input_with(first, alias)


class ProfilingTracer(fx.Tracer):
    """torch.fx tracer whose leaves are torch.nn modules, torchvision.ops modules, and any
    module given by type or qualified name in `leaf_modules`. Augmented assignments are
    recorded in place (InPlaceProxy), as the model runs them; a torch.autograd.Function's
    ``apply`` is one node (capture/functions.py).

    After a failed trace, `failed_modules` lists the paths of the submodules whose forward
    raised, innermost first (the root is not listed).

    Example:
        >>> tracer = ProfilingTracer(leaf_modules=["encoder"])
    """

    def __init__(self, leaf_modules: Iterable = (), autowrap_functions: Iterable = ()) -> None:
        super().__init__(autowrap_functions=tuple(autowrap_functions))
        self.uninteresting: set[str] = set()  # see create_node
        leaves = list(leaf_modules)
        self.leaf_names = {leaf for leaf in leaves if isinstance(leaf, str)}
        self.leaf_types = tuple(leaf for leaf in leaves if isinstance(leaf, type))
        self.failed_modules: list[str] = []

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if module_qualified_name in self.leaf_names or isinstance(m, self.leaf_types):
            return True
        if type(m).__module__.startswith("torchvision.ops"):
            return True
        return super().is_leaf_module(m, module_qualified_name)

    def proxy(self, node: fx.Node) -> fx.Proxy:
        return InPlaceProxy(node, self)

    def trace(self, root, concrete_args=None) -> fx.Graph:
        self.uninteresting = uninteresting_files()
        with functions_kept_whole(self):
            graph = super().trace(root, concrete_args)
        alias_before_in_place(graph)
        return graph

    def create_node(self, *args, **kwargs) -> fx.Node:
        """torch.fx's node with the stack trace that torch.fx's record_stack_traces records
        (the frames from the first forward on, torch's internals left out; capture.source
        reads it), taken with Python's traceback module: torch's native stack capture and its
        list of internal files load Inductor, TorchDynamo and torch.export (seconds)."""
        node = super().create_node(*args, **kwargs)
        if not node.stack_trace:
            frames = traceback.extract_stack(sys._getframe(1))
            first = next((i for i, frame in enumerate(frames) if frame.name == "forward"),
                         len(frames))
            kept = [frame for frame in frames[first:] if frame.filename not in self.uninteresting]
            if kept:
                node.stack_trace = "".join(traceback.StackSummary.from_list(kept).format()).strip()
        return node

    def create_proxy(self, kind: str, target, args, kwargs, *rest, **options) -> fx.Proxy:
        """Records a call; a torch.distributed collective's constant arguments (ReduceOp,
        process group) are bound to its target, which the graph's code cannot spell."""
        if kind == "call_function":
            target, args, kwargs = bind_constants(target, args, kwargs)
        return super().create_proxy(kind, target, args, kwargs, *rest, **options)

    def call_module(self, m: torch.nn.Module, forward, args, kwargs) -> Any:
        try:
            return super().call_module(m, forward, args, kwargs)
        except Exception:
            try:
                self.failed_modules.append(self.path_of_module(m))
            except NameError:  # a module called but not installed as a submodule
                pass
            raise


@dataclass
class Capture:
    """A captured model and how it was obtained.

    mode: "fx" (plain trace), "dynamo" (TorchDynamo's graph), "fx+leaf" (traced after making
    failing submodules leaves), "hooks" (leaf modules timed by forward hooks, `graph_module`
    is None) or "whole" (the model timed as one node). `leaves` holds the (path, module)
    pairs hooked in the last two. `graph_inputs` (dynamo only): what each placeholder takes,
    a position in `input_tensors(...)` of a call's inputs or a constant tensor. `frame`
    (dynamo for exact outputs only): the capture/dynamo_frame.DynamoFrame that makes calls.
    """

    graph_module: fx.GraphModule | None
    mode: str = FX
    notes: list[str] = field(default_factory=list)
    leaves: list[tuple[str, torch.nn.Module]] = field(default_factory=list)
    graph_inputs: list | None = None
    frame: Any = None
    _binder: Binder | None = field(default=None, init=False, repr=False, compare=False)

    def graph_module_or_raise(self) -> fx.GraphModule:
        """`graph_module`, for a capture that has one (every mode but "hooks" and "whole").

        Example:
            >>> isinstance(capture(torch.nn.ReLU()).graph_module_or_raise(), fx.GraphModule)
            True
            >>> Capture(None, "hooks").graph_module_or_raise()
            Traceback (most recent call last):
            ...
            pyfxprof.errors.PyfxprofError: the hooks capture has no graph module
        """
        if self.graph_module is None:
            raise PyfxprofError(f"the {self.mode} capture has no graph module")
        return self.graph_module

    def graph_args(self, args: tuple = (), kwargs: dict | None = None) -> tuple:
        """The graph's positional inputs for the call `model(*args, **kwargs)`.

        Example:
            >>> captured = capture(torch.nn.Linear(2, 2))
            >>> len(captured.graph_args((), {"input": torch.zeros(1, 2)}))
            1
        """
        bound = BoundInputs(args, kwargs or {})
        if self.graph_inputs is not None:
            tensors = input_tensors(bound)
            return tuple(tensors[k] if isinstance(k, int) else k for k in self.graph_inputs)
        if self._binder is None:  # the graph's signature, read once (calls reuse its plans)
            self._binder = Binder(inspect.signature(self.graph_module_or_raise().forward))
        bound = self._binder(bound.args, bound.kwargs)
        if bound.kwargs:
            raise PyfxprofError(f"keywords {', '.join(bound.kwargs)} reach forward only "
                                "through **kwargs, which a traced graph cannot receive — use "
                                "capture='auto', 'dynamo' or 'hooks'")
        return bound.args


def capture(model: torch.nn.Module, leaf_modules: Iterable = (), autowrap_functions: Iterable = (),
            concrete_args: dict[str, Any] | None = None, mode: str = FX) -> Capture:
    """Capture `model` for timing without running it; the model itself is not modified.

    mode "fx" traces or raises a one-line PyfxprofError; "fx+leaf" retries with failing
    submodules made leaves (`leaf_trace`); "hooks" and "whole" skip tracing. The ladder
    over every mode, inputs included, is pyfxprof.capture.ladder.prepare.

    Example:
        >>> capture(torch.nn.Sequential(torch.nn.ReLU())).mode
        'fx'
    """
    if not isinstance(model, torch.nn.Module):
        raise PyfxprofError(f"expected a torch.nn.Module, got {type(model).__name__}")
    if mode not in STATIC_MODES:
        raise PyfxprofError(f"capture must be one of {', '.join(STATIC_MODES)}, got {mode!r}")
    if RUNG[mode].own_call:
        return fallback_capture(model, leaf_modules, [], whole=mode == WHOLE)
    if isinstance(model, fx.GraphModule):
        return Capture(model, FX, ["model is already a GraphModule"])
    if mode == FX_LEAF:
        return leaf_trace(model, list(leaf_modules), tuple(autowrap_functions), concrete_args)
    tracer = ProfilingTracer(leaf_modules, autowrap_functions)
    try:
        return Capture(_trace(tracer, model, concrete_args), FX, [])
    except Exception as error:  # any tracing failure becomes a one-line explanation
        raise PyfxprofError(
            f"torch.fx cannot trace {_failure_site(model, tracer, error)}: {_reason(error)} — make the "
            "failing submodule a leaf (leaf_modules=[...]), pass concrete_args for data-dependent "
            "control flow, or use capture='auto'") from None


def _trace(tracer: ProfilingTracer, model: torch.nn.Module, concrete_args) -> fx.GraphModule:
    """The traced graph (see _trace_graph); the tensor constants FX stores on the traced root
    (``_tensor_constant0``) end up on the GraphModule, not on the model."""
    attributes = set(vars(model))
    try:
        return _trace_graph(tracer, model, concrete_args)
    finally:
        for added in set(vars(model)) - attributes:
            delattr(model, added)


def _trace_graph(tracer: ProfilingTracer, model: torch.nn.Module,
                 concrete_args) -> fx.GraphModule:
    """The traced graph. The tracer reads buffers as plain tensors, so an in-place change
    of one in forward (``self.count.add_(1)``) would run once, at trace time, and be missing
    from the graph: such a trace is undone and redone with buffers traced as proxies, so the
    graph holds the change and the model keeps its values. A forward that assigns a buffer
    or parameter (``self.steps = self.steps + 1``) cannot be held by a graph: the trace
    fails at the module that assigns it (a submodule can be made a leaf)."""
    guard, bindings = InPlaceGuard(model), _bindings(model)
    try:
        graph = tracer.trace(model, concrete_args=concrete_args)
    finally:
        changed = guard.changed()
        guard.restore()
        rebound = _rebind(bindings)
    if rebound:
        path, name = rebound[0]
        tracer.failed_modules = [path] if path else []
        raise RuntimeError(f"forward assigns {name!r}, which a traced graph cannot do")
    if changed:
        tracer.proxy_buffer_attributes = True
        graph = tracer.trace(model, concrete_args=concrete_args)
    return fx.GraphModule(tracer.root, graph, type(model).__name__)


def _bindings(model: torch.nn.Module) -> list[tuple]:
    """(path, module, its buffers, its parameters) of every module, as bound now."""
    return [(path, module, dict(module._buffers), dict(module._parameters))
            for path, module in model.named_modules()]


def _rebind(bindings: list[tuple]) -> list[tuple[str, str]]:
    """Bind every module's buffers and parameters back as in `bindings`; the (path, name)
    of those that had been assigned, innermost module first."""
    rebound: list[tuple[str, str]] = []
    for path, module, buffers, parameters in reversed(bindings):
        for own, saved in ((module._buffers, buffers), (module._parameters, parameters)):
            if own.keys() != saved.keys() or any(own[k] is not v for k, v in saved.items()):
                rebound.extend((path, name) for name in own.keys() | saved.keys()
                               if own.get(name) is not saved.get(name))
                own.clear()
                own.update(saved)
    return rebound


def leaf_trace(model: torch.nn.Module, leaves: list, autowrap: tuple = (),
               concrete_args: dict | None = None) -> Capture:
    """FX trace; on failure make the innermost failing submodule a leaf and retry, at most
    MAX_LEAF_ATTEMPTS times. A type that fails a second time is made a leaf as a type (all
    twelve BertLayers at once). Raises PyfxprofError (the notes so far, `; `-joined) when
    the failure is in the root's own forward or the attempts run out.

    Example:
        >>> leaf_trace(torch.nn.Sequential(torch.nn.ReLU()), []).mode
        'fx'
    """
    notes: list[str] = []
    failed_types: set[type] = set()
    failure = ""  # (set by every attempt that does not return)
    for _ in range(MAX_LEAF_ATTEMPTS + 1):
        tracer = ProfilingTracer(leaves, autowrap)
        try:
            return Capture(_trace(tracer, model, concrete_args), FX_LEAF if notes else FX,
                           notes)
        except Exception as error:
            failure = f"torch.fx cannot trace {_failure_site(model, tracer, error)}: {_reason(error)}"
        path = next((p for p in tracer.failed_modules
                     if not tracer.is_leaf_module(model.get_submodule(p), p)), None)
        if path is None and not notes:
            raise PyfxprofError(f"{failure} — no submodule to make a leaf")
        if path is None or len(notes) == MAX_LEAF_ATTEMPTS:
            break
        kind = type(model.get_submodule(path))
        if kind in failed_types:
            notes.append(f"{failure} — made every {kind.__name__} a leaf")
            leaves.append(kind)
        else:
            notes.append(f"{failure} — made {path} a leaf")
            leaves.append(path)
            failed_types.add(kind)
    raise PyfxprofError("; ".join(notes + [failure]))


def fallback_capture(model: torch.nn.Module, leaf_modules: Iterable, notes: list[str],
                     whole: bool = False) -> Capture:
    """A hooks capture of `model`'s leaf modules, or the whole model as one node when `whole`
    or when it has no submodule to hook.

    Example:
        >>> fallback_capture(torch.nn.Sequential(torch.nn.ReLU()), (), []).mode
        'hooks'
    """
    leaves = [] if whole else hook_leaves(model, leaf_modules)
    if leaves:
        return Capture(None, HOOKS, notes, leaves)
    if not whole:
        notes = notes + [f"{type(model).__name__} has no submodule to hook — timing it whole"]
    return Capture(None, WHOLE, notes, [("", model)])


def hook_leaves(model: torch.nn.Module,
                leaf_modules: Iterable = ()) -> list[tuple[str, torch.nn.Module]]:
    """(path, module) of the modules hooks time: ProfilingTracer's leaves and modules without
    children, found from the root without descending into a leaf; each module once.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
        >>> [path for path, _ in hook_leaves(model)]
        ['0', '1']
    """
    tracer = ProfilingTracer(leaf_modules)
    leaves, seen, pending = [], {id(model)}, list(model.named_children())
    while pending:
        path, module = pending.pop(0)
        if id(module) in seen:
            continue
        seen.add(id(module))
        children = list(module.named_children())
        if not children or (tracer.is_leaf_module(module, path)
                            and not isinstance(module, _CONTAINERS)):
            leaves.append((path, module))
        else:
            pending[:0] = [(f"{path}.{name}", child) for name, child in children]
    return leaves


def _failure_site(model: torch.nn.Module, tracer: ProfilingTracer, error: Exception) -> str:
    """'path (Type)' of the innermost submodule whose forward raised, or the root's type
    (and the decorator its forward is wrapped in, when that is why FX failed: FX rebuilds
    the forward's code with as many arguments as the unwrapped signature has)."""
    if not tracer.failed_modules:
        forward = type(model).forward
        if isinstance(error, ValueError) and "co_varnames" in str(error):
            return f"{type(model).__name__} ({_own_forward(forward)})"
        return f"{type(model).__name__} (its own forward)"
    path = tracer.failed_modules[0]
    return f"{path} ({type(model.get_submodule(path)).__name__})"


def _own_forward(forward: Any) -> str:
    """'its own forward', or what FX cannot trace about it: a decorator's wrapper taking
    *args (transformers' @can_return_tuple, for one) gives FX no named arguments to fill.

    >>> import functools
    >>> def logged(f):
    ...     @functools.wraps(f)
    ...     def wrapper(*args, **kwargs): return f(*args, **kwargs)
    ...     return wrapper
    >>> _own_forward(logged(lambda self, x: x))
    'its forward is wrapped by logged.<locals>.wrapper, which takes *args'
    """
    code = getattr(forward, "__code__", None)
    if (getattr(forward, "__wrapped__", None) is None or code is None
            or not code.co_flags & inspect.CO_VARARGS):
        return "its own forward"
    return f"its forward is wrapped by {code.co_qualname}, which takes *args"


def _reason(error: BaseException) -> str:
    """'Type: first line', cut to its first sentence when long (FX adds long advice)."""
    text = first_line(error)
    if len(text) > 100 and ". " in text:
        text = text.split(". ", 1)[0] + "."
    return f"{type(error).__name__}: {text}"


def timed_nodes(graph: fx.Graph) -> list[fx.Node]:
    """The nodes that get timed, in execution order."""
    return [node for node in graph.nodes if node.op in TIMED_OPS]
