"""Guards on what a Dynamo frame reads from the caller's objects where Dynamo installs none.

Dynamo's guards check what its trace read: an attribute's value, a dict's item, and a key's
absence where its model of the lookup installs a guard (``getattr(obj, k, 0)`` on an object gets
a ``hasattr`` guard, ``d.get(k)`` a ``not in`` guard). Some of its models answer from the
object as it is at trace time and install none, so a later call gets the trace's answer again
after the caller changed it, and ``torch.compile`` returns stale outputs:

- an instance dict's key set (``obj.__dict__.get(k, 0)``, ``k in vars(obj)``, its length, its
  keys, a copy of it): Dynamo's ``DunderDictVariable`` turns the key guards its dict model asks
  for into no-ops (Hugging Face configs read ``self.__dict__.get(...)`` at every attribute
  access);
- a key missing from a dict (``d[k]`` raising ``KeyError``, caught: what ``Mapping.get`` and
  ``os.environ.get`` do), and an attribute missing from a Python module or a function
  (``getattr(module, k, 0)``, ``hasattr(function, k)``): the lookup raises, or answers from
  the object as it is, with no guard;
- a value made of all of a dict's keys (``repr(d)``, ``f"{d}"``, ``any(d)`` folded as a
  constant, ``set(d)``, ``frozenset(d)``, ``dict.fromkeys(d)``);
- a call of a ``functools.lru_cache``'d function, traced past its cache (whose answer, and the
  call's filling it, no guard or replay covers).

While a capture runs (`guarding_unguarded_reads`, in the capturing thread only) each of those
models installs the guard its answer needs, as Dynamo's dict model does elsewhere: the key in
or not in that dict (its instance dict for a module's or a function's attribute), or the dict's
key set; the call's guard check then refuses a later call whose answer would differ (a new
guard variant is captured). A cached call becomes a graph break (it runs as it is). Where no
guard can say it (a module's ``__getattr__``, torch's aside), the frame notes the read
(`unguarded_reads`) and the capture runs the model's own forward for that signature. Nothing
is wrapped between captures (Dynamo's models are put back); a call of the model pays one more
C++ guard per key read this way, nothing else. On a torch whose Dynamo lacks one of these
models, that model is left as it is.
"""

from __future__ import annotations

import functools
import importlib
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .unguarded_stores import source_name

_LOCK = threading.Lock()
_OPEN = [0]  # captures open now, all threads
_THREAD = threading.local()  # .depth: captures open in this thread
_NOTES: dict[int, set[str]] = {}  # id(Dynamo's OutputGraph of a frame) -> reads left unguarded
_GUARDED: dict[int, set[tuple]] = {}  # id(OutputGraph) -> the guards installed here in it
_ORIGINALS: list[tuple[type, str, Callable]] = []


def _capturing() -> bool:
    return getattr(_THREAD, "depth", 0) > 0


def _current_output() -> Any:
    from torch._dynamo.symbolic_convert import InstructionTranslator

    return InstructionTranslator.current_tx().output


def _note(owner: str, what: str) -> None:
    """Note that the frame being traced read `what` of `owner` with no guard on it (no frame
    being traced: nothing to note)."""
    try:
        output = _current_output()
    except Exception:  # (Dynamo asked outside a trace: no frame's answer to tell of)
        return
    _NOTES.setdefault(id(output), set()).add(f"{owner}{what}")


def _guard(source: Any, kind: str, **kwargs: Any) -> None:
    """Install Dynamo's guard `kind` (a GuardBuilder method's name) on `source`, once per frame
    (Dynamo tells guards apart by their function's identity: a repeated read would add a
    repeated check)."""
    from torch._dynamo.guards import GuardBuilder, install_guard

    installed = _GUARDED.setdefault(id(_current_output()), set())
    key = (source_name(source), kind, tuple(sorted(kwargs.items())))
    if key in installed:
        return
    installed.add(key)
    builder = getattr(GuardBuilder, kind)
    install_guard(source.make_guard(functools.partial(builder, **kwargs) if kwargs else builder))


def _guard_key(source: Any, key: Any, present: bool) -> None:
    _guard(source, "DICT_CONTAINS" if present else "DICT_NOT_CONTAINS", key=key)


def _guard_safely(variable: Any, install: Callable[[], None]) -> None:
    """Run `install` (the guard of a read of `variable`) while this thread captures and the
    object is the caller's (it has a source); where it fails, note the read instead."""
    owner = source_name(getattr(variable, "source", None)) if _capturing() else None
    if owner is not None:
        try:
            install()
        except Exception:  # (no guard says it: the capture runs the model's own forward)
            _note(owner, " (read; no guard could be installed)")


def _instance_dict_keys(original: Callable) -> Callable:
    """DunderDictVariable.install_dict_keys_match_guard (a no-op in Dynamo): the instance
    dict's key set guarded."""
    @functools.wraps(original)
    def guarding(self) -> None:
        original(self)
        _guard_safely(self, lambda: _guard(self.source, "DICT_KEYS_MATCH"))
    return guarding


def _instance_dict_contains(original: Callable) -> Callable:
    """DunderDictVariable.install_dict_contains_guard (a no-op in Dynamo): the key in or not in
    the instance dict as the call found it (its keys before the frame's own writes)."""
    @functools.wraps(original)
    def guarding(self, tx: Any, args: list) -> None:
        original(self, tx, args)
        _guard_safely(self, lambda: _contains_guard(self, args[0]))
    return guarding


def _contains_guard(variable: Any, key: Any) -> None:
    if key.source is None and key.is_python_constant():
        name = key.as_python_constant()
        _guard_key(variable.source, name, name in variable.items.item_dict)
    else:  # (a key Dynamo holds no constant of: the whole key set)
        _guard(variable.source, "DICT_KEYS_MATCH")


def _whole_dict(original: Callable) -> Callable:
    """A dict model's answer built from all its keys with no guard on them (its repr, its value
    as a constant that a builtin such as ``any`` folds; a view's repr): the dict's keys guarded
    first (``DICT_KEYS_MATCH``; an instance dict's through the guard above), as Dynamo's
    other whole-dict answers (iteration, ``len``) are."""
    @functools.wraps(original)
    def guarding(self, *args: Any, **kwargs: Any) -> Any:
        held = getattr(self, "dv_dict", self)  # (a keys, values or items view: its dict)
        _guard_safely(held, held.install_dict_keys_match_guard)
        return original(self, *args, **kwargs)
    return guarding


def _dict_operands(original: Callable) -> Callable:
    """A model reading the keys of dicts handed to it straight from Dynamo's record of them
    (``set(d)``, ``s.update(d)`` and the other set operations, ``frozenset(d)``,
    ``dict.fromkeys(d)``):
    each dict's keys guarded first."""
    @functools.wraps(original)
    def guarding(self, *args: Any, **kwargs: Any) -> Any:
        from torch._dynamo.variables.dicts import ConstDictVariable

        for operand in (*args, *kwargs.values()):
            if isinstance(operand, ConstDictVariable):
                _guard_safely(operand, operand.install_dict_keys_match_guard)
        return original(self, *args, **kwargs)
    return guarding


def _instance_dict_copy(original: Callable) -> Callable:
    """DunderDictVariable.call_method: ``obj.__dict__.copy()`` (a new dict of all its keys, no
    guard) guarded on the instance dict's keys."""
    @functools.wraps(original)
    def guarding(self, tx: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "copy":
            _guard_safely(self, self.install_dict_keys_match_guard)
        return original(self, tx, name, *args, **kwargs)
    return guarding


def _dict_miss(original: Callable) -> Callable:
    """ConstDictVariable.getitem_const_raise_exception_if_absent: a missing key guarded as
    ``d.get`` guards it, before the KeyError the caller may catch."""
    @functools.wraps(original)
    def guarding(self, tx: Any, arg: Any) -> Any:
        if arg not in self:
            _guard_safely(self, lambda: self.install_dict_contains_guard(tx, [arg]))
        return original(self, tx, arg)
    return guarding


def _attribute_miss(original: Callable) -> Callable:
    """A Python module's or a function's attribute lookup: an absent name guarded as not in its
    instance dict (where the name would appear), before the AttributeError the caller may
    catch."""
    @functools.wraps(original)
    def guarding(self, tx: Any, name: str) -> Any:
        try:
            return original(self, tx, name)
        except Exception as error:
            if _observed(error):
                _guard_safely(self, lambda: _attribute_guard(self, name))
            raise
    return guarding


def _function_hasattr(original: Callable) -> Callable:
    """BaseUserFunctionVariable.call_obj_hasattr (``hasattr(f, k)``, ``getattr(f, k, d)``,
    answered from the function as it is): the name in or not in the function's instance dict
    guarded."""
    @functools.wraps(original)
    def guarding(self, tx: Any, name: str) -> Any:
        answer = original(self, tx, name)
        _guard_safely(self, lambda: _attribute_guard(self, name))
        return answer
    return guarding


def _attribute_guard(variable: Any, name: str) -> None:
    """`name` in or not in the instance dict of `variable`'s object (a module or a function:
    where its attributes live); a module with ``__getattr__`` (its own or its class's: a lazy
    module), whose code decides, noted, but torch's own (they resolve their lazy submodules,
    which land in that dict)."""
    from torch._dynamo.source import AttrSource

    value = variable.get_real_python_backed_value()
    namespace = vars(value)
    hooked = "__getattr__" in namespace or hasattr(type(value), "__getattr__")
    if hooked and not getattr(variable, "is_torch", False):
        _note(source_name(variable.source) or "?", f".{name} (its __getattr__ decides)")
    else:
        _guard_key(AttrSource(variable.source, "__dict__"), name, name in namespace)


def _cache_kept(original: Callable) -> Callable:
    """WrapperUserFunctionVariable.call_function: a call of a ``functools.lru_cache``'d function
    (not torch's), which Dynamo traces past its cache (the cache is state no guard checks, and
    the traced call fills no cache), made a graph break, so that the call runs as it is."""
    @functools.wraps(original)
    def breaking(self, tx: Any, *args: Any, **kwargs: Any) -> Any:
        if _capturing() and _past_a_cache(self.wrapper_obj):
            from torch._dynamo.exc import unimplemented

            unimplemented(gb_type="pyfxprof: a functools.lru_cache'd call",
                          context=repr(self.wrapper_obj),
                          explanation="the Profiler's capture runs a cached call as it is",
                          hints=[])
        return original(self, tx, *args, **kwargs)
    return breaking


def _past_a_cache(wrapper: Any) -> bool:
    """Whether Dynamo would trace past `wrapper`'s cache (an lru_cache of a function outside
    torch, not one it knows to be safe), as its warning about such calls says."""
    from torch._dynamo import utils

    if not hasattr(wrapper, "cache_info") or getattr(
            utils, "is_lru_cache_wrapper_trace_without_warning_allowed", lambda _: False)(wrapper):
        return False
    module = getattr(getattr(wrapper, "__wrapped__", None), "__module__", "") or ""
    return module.split(".", maxsplit=1)[0] != "torch"


def _observed(error: Exception) -> bool:
    """Whether `error` is one the traced code may catch (not a graph break)."""
    from torch._dynamo.exc import ObservedException

    return isinstance(error, ObservedException)


#: (module of torch._dynamo, class, method, the method installing its guard)
_MODELS = (
    ("variables.dicts", "DunderDictVariable", "install_dict_keys_match_guard",
     _instance_dict_keys),
    ("variables.dicts", "DunderDictVariable", "install_dict_contains_guard",
     _instance_dict_contains),
    ("variables.dicts", "DunderDictVariable", "call_method", _instance_dict_copy),
    ("variables.dicts", "ConstDictVariable", "getitem_const_raise_exception_if_absent",
     _dict_miss),
    ("variables.dicts", "ConstDictVariable", "as_python_constant", _whole_dict),
    ("variables.dicts", "ConstDictVariable", "tp_repr_impl", _whole_dict),
    ("variables.dicts", "OrderedDictVariable", "tp_repr_impl", _whole_dict),
    ("variables.dicts", "DictViewVariable", "tp_repr_impl", _whole_dict),
    ("variables.sets", "SetVariable", "_iter_operand_keys", _dict_operands),
    ("variables.sets", "SetVariable", "_operand_keys", _dict_operands),
    ("variables.builtin", "BuiltinVariable", "call_frozenset", _dict_operands),
    ("variables.builtin", "DictBuiltinVariable", "call_custom_dict_fromkeys", _dict_operands),
    ("variables.misc", "PythonModuleVariable", "tp_getattro_impl", _attribute_miss),
    ("variables.functions", "BaseUserFunctionVariable", "call_getattr_fallback",
     _attribute_miss),
    ("variables.functions", "BaseUserFunctionVariable", "call_obj_hasattr", _function_hasattr),
    ("variables.functions", "WrapperUserFunctionVariable", "call_function", _cache_kept),
)


@contextmanager
def guarding_unguarded_reads() -> Iterator[None]:
    """While open, Dynamo's traces in this thread guard the reads above (or note them,
    `unguarded_reads`); nested and concurrent captures share the wrapped models.

    >>> with guarding_unguarded_reads():
    ...     pass
    """
    with _LOCK:
        if _OPEN[0] == 0:
            _wrap_models()
        _OPEN[0] += 1
    _THREAD.depth = getattr(_THREAD, "depth", 0) + 1
    try:
        yield
    finally:
        _THREAD.depth -= 1
        with _LOCK:
            _OPEN[0] -= 1
            if _OPEN[0] == 0:
                _unwrap_models()
                _NOTES.clear()
                _GUARDED.clear()


def _wrap_models() -> None:
    for module, cls_name, method, wrapper in _MODELS:
        try:
            found = importlib.import_module(f"torch._dynamo.{module}")
        except ImportError:  # an older torch lays its models out otherwise: not wrapped
            continue
        cls = getattr(found, cls_name, None)
        original = cls.__dict__.get(method) if isinstance(cls, type) else None
        if isinstance(cls, type) and original is not None:  # (an older torch: not wrapped)
            _ORIGINALS.append((cls, method, original))
            setattr(cls, method, wrapper(original))
            _drop_bound_handlers(cls, method)


def _unwrap_models() -> None:
    while _ORIGINALS:
        cls, method, original = _ORIGINALS.pop()
        setattr(cls, method, original)
        _drop_bound_handlers(cls, method)


def _drop_bound_handlers(cls: type, method: str) -> None:
    """Dynamo's handlers of a builtin (``call_frozenset`` for ``frozenset``) bound to the method
    as it was, dropped from its per-process cache: they are bound again to the method as it is
    now at their next use."""
    cache = getattr(cls, "call_function_handler_cache", None)
    if isinstance(cache, dict) and method.startswith("call_"):
        for key in [key for key in list(cache) if getattr(key[0], "__name__", None) == method[5:]]:
            cache.pop(key, None)


def unguarded_reads() -> list[str]:
    """What the frame Dynamo is compiling now (call it from a backend, inside
    `guarding_unguarded_reads`) read from the caller's objects with no guard able to say it,
    sorted; ``["?"]`` when it cannot be told (no capture open, or outside a compilation).

    >>> unguarded_reads()
    ['?']
    """
    if not _capturing():
        return ["?"]
    try:
        return sorted(_NOTES.get(id(_current_output()), ()))
    except Exception:  # (outside a compilation: no frame to tell of)
        return ["?"]
