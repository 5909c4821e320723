"""The Python state a captured graph bakes in, for the Profiler loop: a traced graph replays
the model's tensor ops with the Python values its forward read at capture (a flag choosing
a branch, a counter, a global scale) as constants, so a replay is the model's call only
while those values are unchanged, and a forward that changes Python state (``self.n +=
1``) is never replayed by a graph at all.

What is watched, per module of the model: its plain ``__dict__`` entries (flags, numbers,
configs; ``forward`` excepted), its parameters, buffers and submodules (replaced objects),
the attributes its own classes define (a class flag, and the instance not shadowing it),
the attributes of plain objects it holds (a config), and the globals read by its class's
``forward`` and by the functions of the model's own code it calls (two levels). Fx gives no
guards of its own, so this is the check of what fx assumed; Dynamo's guards are checked as
well for Dynamo captures. The check runs in C (``_C.StateGuard``): a dict whose version is
unchanged since the last call is one load, so a model whose state does not change pays a
few nanoseconds per module per call.
"""

from __future__ import annotations

import gc
import types
from typing import Any, Callable, Iterator

import torch

from ..timing.native import _C

_ABSENT = type("_Absent", (), {"__repr__": lambda self: "<absent>"})()
_PLAIN = (int, float, bool, str, bytes, complex, type(None))
_OWN = ("_parameters", "_buffers", "_modules")
_NOT_OBJECTS = (torch.nn.Module, torch.Tensor, type, types.FunctionType, types.MethodType,
                types.BuiltinFunctionType, types.ModuleType)
#: How deep the functions a forward calls are followed for the globals they read.
GLOBALS_DEPTH = 2


class PythonState:
    """The Python state `model`'s captured graph assumed, as it was when this was made.

    Example:
        >>> model = torch.nn.Linear(2, 2)
        >>> state = PythonState(model)
        >>> state.holds()
        True
        >>> model.in_features = 3; state.holds(), state.changed()
        (False, ['Linear.in_features'])
    """

    def __init__(self, model: torch.nn.Module, skip: frozenset = frozenset()) -> None:
        """`skip`: ids of modules whose own code a graph runs (fx leaves), not watched."""
        self._entries = list(_entries(_modules(model, skip)))
        self._classes = _class_dicts(model)
        grouped: dict[int, tuple[dict, list]] = {}
        for _, where, space, key, value in self._entries:
            grouped.setdefault(id(space), (space, []))[1].append((key, value))
        self._guard = _C.state_guard([(space, tuple(keys)) for space, keys in grouped.values()],
                                     _ABSENT)

    @property
    def guard(self) -> Any:
        """The native check (``_C.StateGuard``) the hot path calls."""
        return self._guard

    def holds(self) -> bool:
        """Whether every value is still the one captured (equal plain values count as the
        same: the native check is then told to expect the new objects)."""
        if self._guard.holds():
            return True
        if self.changed():
            return False
        self._guard.rebase()
        return True

    def changed(self) -> list[str]:
        """What differs from the capture, as ``Module.attribute`` (empty: nothing)."""
        return [f"{where}.{key}" for _, where, space, key, value in self._entries
                if not _same(space.get(key, _ABSENT), value)]

    def restore(self) -> list[tuple[int | None, str]]:
        """Put every changed value back as captured; what was changed, as (id of the module
        it belongs to, or None, "Module.attribute")."""
        changed = []
        for owner_id, where, space, key, value in self._entries:
            if not _same(space.get(key, _ABSENT), value):
                changed.append((owner_id, f"{where}.{key}"))
                owner = self._classes.get(id(space))
                if owner is not None:  # through the type, so its attribute cache is reset
                    setattr(owner, key, value)
                elif value is _ABSENT:
                    space.pop(key, None)
                else:
                    space[key] = value
        return changed


def python_side_effects(model: torch.nn.Module, capture: Callable[[], Any]) -> tuple[Any, list]:
    """(capture(), the Python state of `model` the capture changed, put back, as (module id
    or None, "Module.attribute")): tracing or analysing a forward runs its Python, so a
    forward that changes Python state (``self.n += 1``, a new attribute, a global) changes
    it during capture.

    Example:
        >>> model = torch.nn.Linear(2, 2)
        >>> python_side_effects(model, lambda: setattr(model, "calls", 1))[1] == \\
        ...     [(id(model), 'Linear.calls')]
        True
        >>> hasattr(model, "calls")
        False
    """
    before = PythonState(model)
    keys = _plain_keys(model)
    try:
        result = capture()
    finally:
        changed = before.restore()
        for module, names in keys:
            for name in set(_public(vars(module))) - names:  # attributes the forward added
                changed.append((id(module), f"{type(module).__name__}.{name}"))
                del vars(module)[name]
    return result, changed


def _plain_keys(model: torch.nn.Module) -> list[tuple[torch.nn.Module, set]]:
    return [(module, set(_public(vars(module)))) for module in _modules(model, frozenset())]


def _public(space: dict) -> Iterator[str]:
    return (key for key in space if not key.startswith("_") and key != "forward")


def _modules(model: torch.nn.Module, skip: frozenset) -> list[torch.nn.Module]:
    """The model's modules, less those in `skip` and their submodules."""
    found: list[torch.nn.Module] = []
    stack = [model]
    while stack:
        module = stack.pop()
        if id(module) in skip or any(module is seen for seen in found):
            continue
        found.append(module)
        stack.extend(reversed(list(module.children())))
    return found


def _own_classes(module: torch.nn.Module) -> Iterator[tuple[type, dict]]:
    """(class, the dict behind its mappingproxy) of the module's own classes (not torch's)."""
    for cls in type(module).__mro__:
        if not cls.__module__.startswith("torch.") and cls is not object:
            yield cls, gc.get_referents(cls.__dict__)[0]


def _class_dicts(model: torch.nn.Module) -> dict[int, type]:
    return {id(space): cls for module in _modules(model, frozenset())
            for cls, space in _own_classes(module)}


def _entries(modules: list[torch.nn.Module]
             ) -> Iterator[tuple[int | None, str, dict, Any, Any]]:
    """(module id or None, where, dict, key, value) for every watched value (see the module
    docstring)."""
    seen_objects: set[int] = set()
    codes: list[tuple[types.FunctionType, int]] = []
    for module in modules:
        where, own, owner = type(module).__name__, vars(module), id(module)
        for key in _public(own):
            value = own[key]
            yield owner, where, own, key, value
            if hasattr(value, "__dict__") and not isinstance(value, _NOT_OBJECTS) \
                    and id(value) not in seen_objects:
                seen_objects.add(id(value))
                attributes = vars(value)
                if isinstance(attributes, dict):
                    for name in list(attributes):
                        if not name.startswith("_"):
                            yield owner, f"{where}.{key}", attributes, name, attributes[name]
        for name in _OWN:
            for key, value in own.get(name, {}).items():
                yield owner, where, own[name], key, value
        for entry in _class_entries(module, where, own):
            yield (owner, *entry)
        forward = getattr(type(module), "forward", None)
        if isinstance(forward, types.FunctionType):
            codes.append((forward, 0))
    for entry in _global_entries(codes):
        yield (None, *entry)


def _class_entries(module: torch.nn.Module, where: str, own: dict
                   ) -> Iterator[tuple[str, dict, Any, Any]]:
    """The plain attributes the module's own classes define (not torch's), and the module
    not shadowing them with its own."""
    for cls, space in _own_classes(module):
        for key, value in list(space.items()):
            if key.startswith("__") or not isinstance(value, _PLAIN):
                continue
            yield f"{cls.__name__}", space, key, value
            if key not in own:
                yield where, own, key, _ABSENT


def _global_entries(functions: list[tuple[types.FunctionType, int]]
                    ) -> Iterator[tuple[str, dict, Any, Any]]:
    """The globals read by `functions` and by the model's own functions they call."""
    seen: set[int] = set()
    while functions:
        function, depth = functions.pop()
        if id(function.__code__) in seen or _library(function):
            continue
        seen.add(id(function.__code__))
        space = function.__globals__
        for name in _names(function.__code__):
            if name in space:
                value = space[name]
                yield f"{function.__module__}", space, name, value
                if isinstance(value, types.FunctionType) and depth < GLOBALS_DEPTH:
                    functions.append((value, depth + 1))


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _library(function: types.FunctionType) -> bool:
    """torch's and the standard library's own functions (their globals are not the model's)."""
    module = function.__module__ or ""
    return module.split(".")[0] in ("torch", "functools", "typing", "builtins", "pyfxprof")


def _same(now: Any, then: Any) -> bool:
    if now is then:
        return True
    return type(now) is type(then) and isinstance(now, _PLAIN) and now == then
