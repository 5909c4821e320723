"""capture/unguarded_reads.py: inside `guarding_unguarded_reads`, a Dynamo frame that reads a key
or an attribute the caller's object lacks (or an instance dict's keys) gets a guard on it, so a
call after the caller adds it runs a new trace; a read no guard can say is noted; outside,
Dynamo's own models are back."""

import contextlib
import functools
import os
import sys
import types

import pytest
import torch

from pyfxprof.capture.unguarded_reads import guarding_unguarded_reads, unguarded_reads
from tests.models import CallerBox, CallerMapping

_OTHER = types.ModuleType("pyfxprof_unguarded_reads_other")
sys.modules[_OTHER.__name__] = _OTHER




def _caught(mapping, key):
    try:
        return mapping[key]
    except KeyError:
        return 0.0


def _flag():
    """A function whose attributes a forward reads."""


# (read of the model `m`, the caller's change after the first call): each read's value is
# absent at the first call, present after the change. Dynamo installs no guard on these.
READS = {
    "module_dict_get": (lambda m: m.__dict__.get("k", 0.0), lambda m: m.__dict__.update(k=5.0)),
    "vars_get": (lambda m: vars(m).get("k", 0.0), lambda m: object.__setattr__(m, "k", 5.0)),
    "key_in_dict": (lambda m: 5.0 if "k" in m.__dict__ else 0.0,
                    lambda m: m.__dict__.update(k=5.0)),
    "dict_keys": (lambda m: 5.0 if "k" in m.__dict__.keys() else 0.0,
                  lambda m: m.__dict__.update(k=5.0)),
    "object_dict_items": (lambda m: float(sum(v for _, v in m.box.__dict__.items())),
                          lambda m: setattr(m.box, "k", 5.0)),
    "submodule_dict_get": (lambda m: m.inner.__dict__.get("k", 0.0),
                           lambda m: m.inner.__dict__.update(k=5.0)),
    "dict_item_caught": (lambda m: _caught(m.table, "k"), lambda m: m.table.update(k=5.0)),
    "mapping_get": (lambda m: m.settings.get("k", 0.0),
                    lambda m: m.settings.data.update(k=5.0)),
    "module_getattr_default": (lambda m: getattr(_OTHER, "K", 0.0),
                               lambda m: setattr(_OTHER, "K", 5.0)),
    "module_hasattr": (lambda m: 5.0 if hasattr(_OTHER, "K") else 0.0,
                       lambda m: setattr(_OTHER, "K", 5.0)),
    "torch_hasattr": (lambda m: 5.0 if hasattr(torch, "pyfxprof_test_k") else 0.0,
                      lambda m: setattr(torch, "pyfxprof_test_k", 5.0)),
    "function_getattr_default": (lambda m: getattr(_flag, "k", 0.0),
                                 lambda m: setattr(_flag, "k", 5.0)),
    "function_dict_get": (lambda m: _flag.__dict__.get("k", 0.0),
                          lambda m: setattr(_flag, "k", 5.0)),
    "environment_variable": (lambda m: float(os.environ.get("PYFXPROF_TEST_K", "0")),
                             lambda m: os.environ.__setitem__("PYFXPROF_TEST_K", "5")),
    # answers built from all of a dict's keys
    "dict_repr": (lambda m: float(len(repr(m.table))), lambda m: m.table.update(k=5.0)),
    "dict_any": (lambda m: 5.0 if any(m.table) else 0.0, lambda m: m.table.update(k=5.0)),
    "instance_dict_copy": (lambda m: m.__dict__.copy().get("k", 0.0),
                           lambda m: m.__dict__.update(k=5.0)),
    "vars_repr": (lambda m: float(len(repr(vars(m.box)))), lambda m: setattr(m.box, "k", 5.0)),
    "set_of_dict": (lambda m: 5.0 * len(set(m.table)), lambda m: m.table.update(k=5.0)),
    "frozenset_of_dict": (lambda m: 5.0 * len(frozenset(m.table)),
                          lambda m: m.table.update(k=5.0)),
    "dict_fromkeys": (lambda m: 5.0 * len(dict.fromkeys(m.table)),
                      lambda m: m.table.update(k=5.0)),
}


# The same question asked in forms Dynamo guards itself (a hasattr guard, a key guard): right
# under torch.compile alone, and no guard of unguarded_reads.py needed.
GUARDED_BY_DYNAMO = {
    "module_getattr_default": (lambda m: getattr(m, "k", 0.0),
                               lambda m: object.__setattr__(m, "k", 5.0)),
    "module_hasattr": (lambda m: 5.0 if hasattr(m, "k") else 0.0,
                       lambda m: m.__dict__.update(k=5.0)),
    "object_getattr_default": (lambda m: getattr(m.box, "k", 0.0),
                               lambda m: m.box.__dict__.update(k=5.0)),
    "class_dict_get": (lambda m: type(m).__dict__.get("k", 0.0),
                       lambda m: setattr(type(m), "k", 5.0)),
    "dict_get": (lambda m: m.table.get("k", 0.0), lambda m: m.table.update(k=5.0)),
    "key_in_dict_attribute": (lambda m: 5.0 if "k" in m.table else 0.0,
                              lambda m: m.table.update(k=5.0)),
    "dict_length": (lambda m: 5.0 * len(m.table), lambda m: m.table.update(k=5.0)),
    "other_module_dict_get": (lambda m: _OTHER.__dict__.get("K", 0.0),
                              lambda m: setattr(_OTHER, "K", 5.0)),
}


def _clean_state():
    """The state READS' changes add, taken away."""
    for holder in (_OTHER, _flag):
        holder.__dict__.pop("K", None), holder.__dict__.pop("k", None)
    torch.__dict__.pop("pyfxprof_test_k", None)
    os.environ.pop("PYFXPROF_TEST_K", None)


@pytest.fixture(autouse=True)
def _clean():
    yield
    _clean_state()


def _model(read):
    torch.manual_seed(0)
    module = type("M", (torch.nn.Module,), {"forward": lambda s, x: s.lin(x) * read(s)})()
    module.lin, module.inner = torch.nn.Linear(2, 2), torch.nn.Module()
    module.box, module.table, module.settings = CallerBox(), {}, CallerMapping()
    return module


def _two_calls(read, change, compiled=True, guarding=True) -> list[float]:
    """Outputs (sums) of two calls of the model, torch.compile'd (each call inside
    guarding_unguarded_reads unless not `guarding`) or eager, with the caller's change between
    them."""
    module, x = _model(read), torch.ones(1, 2)
    torch._dynamo.reset()
    call = torch.compile(module, backend="eager") if compiled else module
    outputs = []
    for turn in range(2):
        if turn:
            change(module)
        with guarding_unguarded_reads() if compiled and guarding else contextlib.nullcontext():
            outputs.append(float(call(x).sum()))
    return outputs


@pytest.mark.parametrize("read", READS)
def test_a_read_of_absent_state_is_guarded_while_capturing(read):
    eager = _two_calls(*READS[read], compiled=False)
    _clean_state()
    assert eager[0] != eager[1]  # (the change matters)
    assert _two_calls(*READS[read]) == eager


@pytest.mark.parametrize("read", GUARDED_BY_DYNAMO)
def test_dynamo_guards_the_other_forms_itself(read):
    eager = _two_calls(*GUARDED_BY_DYNAMO[read], compiled=False)
    _clean_state()
    assert eager[0] != eager[1]
    assert _two_calls(*GUARDED_BY_DYNAMO[read], guarding=False) == eager


def test_a_builtins_handler_bound_before_the_capture_is_bound_again():
    read, change = READS["frozenset_of_dict"]
    _two_calls(read, change, guarding=False)  # (Dynamo binds frozenset's handler once)
    eager = _two_calls(read, change, compiled=False)
    assert _two_calls(read, change) == eager


def test_a_cached_call_runs_as_it_is():
    settings = {"scale": 1.0}
    cached = functools.lru_cache(maxsize=None)(lambda: settings["scale"])

    def calls(compiled: bool) -> tuple:
        cached.cache_clear()
        settings["scale"] = 1.0
        outputs = _two_calls(lambda m: cached(), lambda m: settings.update(scale=5.0), compiled)
        return outputs, cached.cache_info()

    assert calls(compiled=True) == calls(compiled=False)  # (the cache's answer, filled once)


class _LazyModule(types.ModuleType):
    """A module whose class finds its missing attributes (as transformers' lazy modules do)."""

    def __getattr__(self, name):
        raise AttributeError(name)


def _module_with_getattr() -> types.ModuleType:
    lazy = types.ModuleType("pyfxprof_lazy_module")
    lazy.__getattr__ = lambda name: (_ for _ in ()).throw(AttributeError(name))
    return lazy


@pytest.mark.parametrize("make", [_module_with_getattr, lambda: _LazyModule("pyfxprof_lazy")],
                         ids=["module_getattr", "class_getattr"])
def test_a_read_no_guard_can_say_is_noted(make):
    lazy = make()
    seen = []

    def backend(gm, _example_inputs):
        seen.append(unguarded_reads())
        return gm.forward

    module = _model(lambda m: getattr(lazy, "k", 0.0))
    torch._dynamo.reset()
    with guarding_unguarded_reads():
        torch.compile(module, backend=backend)(torch.ones(1, 2))
    assert seen and any(read.endswith(".k (its __getattr__ decides)") for read in seen[0])


def test_dynamos_own_models_are_back_after_the_capture():
    from torch._dynamo.variables.dicts import ConstDictVariable, DunderDictVariable

    before = (DunderDictVariable.__dict__["install_dict_contains_guard"],
              ConstDictVariable.__dict__["getitem_const_raise_exception_if_absent"])
    with guarding_unguarded_reads(), guarding_unguarded_reads():
        assert DunderDictVariable.__dict__["install_dict_contains_guard"] is not before[0]
    assert (DunderDictVariable.__dict__["install_dict_contains_guard"],
            ConstDictVariable.__dict__["getitem_const_raise_exception_if_absent"]) == before


def test_outside_a_capture_nothing_can_be_told():
    assert unguarded_reads() == ["?"]
