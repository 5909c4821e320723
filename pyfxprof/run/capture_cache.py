"""Captures kept across Profiler blocks and profile() calls in one process: a model's
capture, analysis and instrumented executor are reused while the model is the same object
with the same code, structure, dtypes, devices and training flags, for the same input
signature and capture options.

What a capture depends on is the model's *fingerprint*: per module its path, class,
``forward`` code (class and instance), training flag, the state its attributes hold and the
state its ``forward`` reads outside it (the globals its code names, the cells it closes over):
plain values, and containers and plain objects (a config) item by item, a few levels deep
(a traced graph bakes in what its forward read of them), and per parameter and buffer its name,
identity, dtype, device, shape and ``requires_grad``. Values are not part of it: a captured
graph reads the parameters at every call, so an optimizer step or ``load_state_dict`` (which
update the same tensors in place) keeps the capture valid, while replacing a parameter,
``.to(dtype)``, ``.to(device)``, ``.train()``/``.eval()`` or changing an attribute or the
code does not. A Dynamo capture also checks Dynamo's own guards at every call.

Memory stays bounded: at most MAX_MODELS models (least recently used first out) with at
most MAX_ENTRIES captures each. A cached capture refers to the model's modules, so a model
the user dropped stays alive until MAX_MODELS others have been profiled, or until
``clear()``.

``captured()`` is profile()'s capture step: the capture kept for the call's model, input
signature and options, else a new one (capture/ladder.py's ``prepare``) kept once its
executor is made.
"""

from __future__ import annotations

import atexit
import contextlib
import types
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch

from ..capture.inputs import split_inputs
from ..capture.inputs import copied_inputs
from ..capture.ladder import Prepared, prepare, warn_fallback
from ..capture.memory import profiling_memory
from ..capture.source import keeping_library_frames
from ..timing.graph_spans import GraphsExecutor

if TYPE_CHECKING:
    from .arguments import Arguments
    from .wall_clock import StepClock

#: Models whose captures are kept (least recently used first out).
MAX_MODELS = 4
#: Captures kept per model (input signatures x options; oldest first out).
MAX_ENTRIES = 32
_PLAIN = (int, float, bool, str, type(None))
#: nn.Module's own attributes (its parameters, buffers, submodules and hooks are fingerprinted
#: as such or not at all), left out of a module's plain state.
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module()))
#: How deep and how wide plain state is read: containers in containers, an object's attributes.
_STATE_DEPTH, _STATE_ITEMS = 4, 256


def fingerprint(model: torch.nn.Module) -> tuple:
    """What a capture of `model` depends on besides the inputs (see the module docstring).

    Example:
        >>> model = torch.nn.Linear(2, 2)
        >>> before = fingerprint(model)
        >>> fingerprint(model) == before, fingerprint(model.double()) == before
        (True, False)
    """
    modules: list[tuple] = []
    seen: dict[int, Any] = {}  # each object's state read once per fingerprint
    for path, module in model.named_modules(remove_duplicate=False):
        own = vars(module)
        code = _code_of(type(module).forward)
        instance = _code_of(own.get("forward"))  # (the Profiler's wrapper: the class's code)
        plain = tuple(sorted((name, _state(value, _STATE_DEPTH, seen))
                             for name, value in own.items()
                             if name not in _MODULE_INTERNALS and name != "forward"))
        modules.append((path, type(module), code, None if instance is code else instance,
                        module.training, plain, _read_state(type(module).forward, seen)))
    tensors = tuple((name, id(tensor), tensor.dtype, tensor.device, tuple(tensor.shape),
                     tensor.requires_grad)
                    for name, tensor in (*model.named_parameters(remove_duplicate=False),
                                         *model.named_buffers(remove_duplicate=False))
                    if tensor is not None)
    return tuple(modules), tensors


def _state(value: Any, depth: int, seen: dict) -> Any:
    """What a traced graph may have baked in of `value`, hashable: plain values themselves;
    containers (dict, list, tuple, set) and plain objects (a config: their ``__dict__``) item
    by item, `depth` levels down and _STATE_ITEMS items wide; a tensor or module by identity
    (their values and structure are fingerprinted apart); anything else by its type.

    Example:
        >>> _state({"k": [1, 2.5]}, 4, {}) == _state({"k": [1, 2.5]}, 4, {})
        True
        >>> _state({"k": [1, 2.5]}, 4, {}) == _state({"k": [1, 3.0]}, 4, {})
        False
    """
    if type(value) in _PLAIN:
        return value
    if isinstance(value, (torch.Tensor, torch.nn.Module)) or depth == 0:
        return (type(value), id(value))
    key = id(value)
    if key in seen:
        return seen[key]
    seen[key] = (type(value), key)  # a cycle, or an object that refuses reading, as itself
    try:
        seen[key] = (type(value), _contents(value, depth, seen))
    except Exception:  # a container or object whose reading raises: by identity
        pass
    return seen[key]


def _contents(value: Any, depth: int, seen: dict) -> tuple:
    """_state's reading of a container's items or a plain object's attributes."""
    if isinstance(value, dict):
        items = list(value.items())
        return (len(items), *((_state(k, depth - 1, seen), _state(v, depth - 1, seen))
                              for k, v in items[:_STATE_ITEMS]))
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
        return (len(items), *(_state(v, depth - 1, seen) for v in items[:_STATE_ITEMS]))
    if callable(value) or isinstance(value, types.ModuleType) or not hasattr(value, "__dict__"):
        return (id(value),)  # a function, a Python module, a builtin object: by identity
    return (_state(vars(value), depth - 1, seen),)


def _read_state(forward: Any, seen: dict) -> tuple:
    """The state a `forward` reads outside its module (_state of each): the globals its code
    names and the cells it closes over (a traced graph bakes in their values too)."""
    while hasattr(forward, "__wrapped__"):
        forward = forward.__wrapped__
    code = getattr(forward, "__code__", None)
    found: list[Any] = []
    if code is None:
        return ()
    names = getattr(forward, "__globals__", {})
    for name in code.co_names:
        if name in names:
            found.append((name, _state(names[name], _STATE_DEPTH, seen)))
    for cell in getattr(forward, "__closure__", None) or ():
        try:
            found.append(_state(cell.cell_contents, _STATE_DEPTH, seen))
        except ValueError:  # an empty cell
            found.append(None)
    return tuple(found)


def _code_of(function: Any) -> Any:
    """The code object behind a (wrapped, bound) function (None for None); the Profiler's
    own forward wrapper counts as the function it wraps."""
    if function is None:
        return None
    while hasattr(function, "__wrapped__"):
        function = function.__wrapped__
    function = getattr(function, "__func__", function)
    return getattr(function, "__code__", function)


class CaptureCache:
    """Per model, the captures made for it, valid while its fingerprint is unchanged.

    Example:
        >>> cache, model = CaptureCache(), torch.nn.ReLU()
        >>> cache.lookup(model, ("x",)) is None
        True
        >>> cache.keep(model, ("x",), "captured"); cache.lookup(model, ("x",))
        'captured'
        >>> cache.lookup(model.eval(), ("x",)) is None  # another training flag
        True
    """

    def __init__(self) -> None:
        self._models: OrderedDict[int, tuple[torch.nn.Module, tuple, OrderedDict]] = \
            OrderedDict()
        self.max_models = MAX_MODELS

    @contextlib.contextmanager
    def room_for(self, models: int) -> Iterator[None]:
        """Keep the captures of at least `models` models while inside (compare()'s copies
        of both sides, each timed block by block: more models than MAX_MODELS would be
        captured anew at every block), then MAX_MODELS again.

        >>> cache = CaptureCache()
        >>> with cache.room_for(10):
        ...     cache.max_models
        10
        >>> cache.max_models == MAX_MODELS
        True
        """
        before = self.max_models
        self.max_models = max(before, models)
        try:
            yield
        finally:
            self.max_models = before
            self._trim()

    def _trim(self) -> None:
        while len(self._models) > self.max_models:
            self._models.popitem(last=False)

    def lookup(self, model: torch.nn.Module, key: tuple) -> Any:
        """The capture kept for `model` under `key`, or None (also when the model changed
        since: its captures are then forgotten)."""
        entries = self._entries(model)
        if key not in entries:
            return None
        entries.move_to_end(key)
        return entries[key]

    def keep(self, model: torch.nn.Module, key: tuple, value: Any) -> None:
        """Keep `value` as `model`'s capture under `key`."""
        entries = self._entries(model)
        entries[key] = value
        while len(entries) > MAX_ENTRIES:
            entries.popitem(last=False)

    def _entries(self, model: torch.nn.Module) -> OrderedDict:
        """The model's captures (emptied when its fingerprint changed), most recent last."""
        found = self._models.get(id(model))
        current = fingerprint(model)
        if found is None or found[0] is not model or found[1] != current:
            found = (model, current, OrderedDict())
        self._models[id(model)] = found
        self._models.move_to_end(id(model))
        self._trim()
        return found[2]

    def clear(self) -> None:
        """Forget every capture (the models they refer to can then be freed)."""
        self._models.clear()


#: The process's capture cache (the Profiler's call groups, profile()'s graph captures).
CAPTURES = CaptureCache()
# Freed before the interpreter tears modules down: Dynamo's weak-reference callbacks on the
# cached graphs then still find their modules (else "Exception ignored" lines at exit).
atexit.register(CAPTURES.clear)


def cache_key(example_inputs: Any, cacheable: bool, options: tuple) -> tuple | None:
    """What a graph capture of profile() is reused for: every argument's dtype, shape,
    device and requires_grad (plain values by value) and the options; None (not cached)
    when not `cacheable` or an argument is anything else (a cache object, a list of
    tensors), whose contents the capture may depend on.

    Example:
        >>> cache_key((torch.ones(2), 3), True, ("fx",))[1][1]
        (1, 3)
    """
    if not cacheable:
        return None
    key: list[tuple] = []
    args, kwargs = split_inputs(example_inputs)
    for name, value in [*enumerate(args), *kwargs.items()]:
        if isinstance(value, torch.Tensor):
            key.append((name, value.dtype, tuple(value.shape), value.device,
                        value.requires_grad))
        elif type(value) in (int, float, bool, str, type(None)):
            key.append((name, value))
        else:
            return None
    return ("profile", tuple(key), *(repr(option) for option in options))


def captured(given: Arguments, own: torch.nn.Module,
             clock: StepClock) -> tuple[Prepared, Any, Callable[[Any], Any]]:
    """(a Prepared, its executor or None, keep) for profile()'s checked and placed
    arguments `given`, with a warning when "auto" had to fall back (ladder.warn_fallback);
    the wall time in `clock`, the analysis run's as "analysis", the rest as "capture".

    A graph capture cached for these inputs' signature and options (capture, tracer
    options, granularity, mode, grad) comes with the graph arguments of these inputs and
    its executor; else prepare()'s capture, None and ``keep(executor)``, which keeps a graph
    capture (not hooks or whole; several Dynamo graphs too, their executor then keeping its
    graphs after each profile) with its executor for the next calls and returns the
    executor. Nothing is cached for a model that is not the user's `own` (a copy moved to
    the device asked for) or with device events, profile_memory, backward (a train-mode
    capture) or library_frames on."""
    model, options, capture = given.model, given.capture, given.capture.capture
    tracer = options.tracer
    flags = (given.timing.device_events, options.profile_memory, given.backward,
             options.library_frames)
    key = cache_key(given.example_inputs, model is own and not any(flags), (
        capture, tracer, options.granularity, given.timing.mode, given.grad))
    with clock.step("capture"):
        found = _cached(model, given.example_inputs, key)
        if found is None:
            with profiling_memory(options.profile_memory), \
                    keeping_library_frames(options.library_frames):
                prepared = prepare(model, given.example_inputs, capture, tracer,
                                   options.granularity)
            found = prepared, None, _keeper(model, key, prepared)
    clock.moved("capture", "analysis", found[0].analysis_s)
    warn_fallback(found[0].captured, capture)
    return found


def _cached(model: torch.nn.Module, example_inputs: Any, key: tuple | None) -> tuple | None:
    """(the Prepared kept under `key` with these inputs' graph arguments, its executor,
    None), or None when none is kept."""
    found = None if key is None else CAPTURES.lookup(model, key)
    if found is None:
        return None
    prepared, executor = found
    bound = copied_inputs(model, example_inputs)  # as prepare() copies them
    if isinstance(executor, GraphsExecutor):  # Dynamo's code takes the call as bound
        executor.kwargs = bound.kwargs
        return replace(prepared, args=bound.args, kwargs=bound.kwargs,
                       analysis_s=0.0), executor, None
    args = prepared.captured.graph_args(bound.args, bound.kwargs)
    return replace(prepared, args=args, analysis_s=0.0), executor, None


def _keeper(model: torch.nn.Module, key: tuple | None,
            prepared: Prepared) -> Callable[[Any], Any]:
    """keep(executor): keeps a graph capture and its executor under `key` (nothing for
    hooks and whole captures, or without a key) and returns the executor."""
    def keep(executor: Any) -> Any:
        if key is not None and prepared.analysis is None:
            CAPTURES.keep(model, key, (prepared, executor))
            if isinstance(executor, GraphsExecutor):
                executor.releases = False
        return executor
    return keep
