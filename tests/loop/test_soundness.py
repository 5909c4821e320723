"""The Profiler loop is sound by construction (loop/calls.py,
capture/live_capture.py): generated forwards read and change state in every container and scope
Python has, the state changed between calls, and each output and the state after each call
must equal a plain twin's given the same calls; nothing raises into the caller."""

import collections
import copy
import functools
import itertools
import random
import sys
import types

import numpy as np
import pytest
import torch

import pyfxprof
from tests.models import CallerBox, CallerMapping

# Where a value lives: (how to make the holder on a model, read it, write it). Each place is
# a container or scope: an attribute, a dict, a list, a set, a tuple in a list, a nested
# module's attribute, a registered buffer (in place), a parameter (read), a closure cell,
# another module's global, a class attribute, a default-argument object, the instance's dict
# written past __setattr__, and a key or attribute absent until the caller adds it (an
# instance dict's, a dict's, a mapping's, another module's, a function's), other containers
# (deque, defaultdict, numpy array, a tensor attribute, a namespace object, nested containers)
# and Python's and numpy's random generators (their states compared after each call).
_OTHER = types.ModuleType("pyfxprof_soundness_other")
sys.modules[_OTHER.__name__] = _OTHER


def _lazy_module() -> types.ModuleType:
    """A module whose attributes its ``__getattr__`` finds in a dict (PEP 562)."""
    module = types.ModuleType("pyfxprof_soundness_lazy")
    module.values = {}

    def __getattr__(name):
        try:
            return module.values[name]
        except KeyError:
            raise AttributeError(name) from None
    module.__getattr__ = __getattr__
    return module


def _caught(mapping, key, default):
    try:
        return mapping[key]
    except KeyError:
        return default


def _closure_cell():
    box = 1.0

    def read():
        return box

    def write(value):
        nonlocal box
        box = value
    return read, write


PLACES = {
    "attribute": (lambda m: setattr(m, "v", 1.0), lambda m: m.v, lambda m, v: setattr(m, "v", v)),
    "dict": (lambda m: setattr(m, "d", {"v": 1.0}), lambda m: m.d["v"],
             lambda m, v: m.d.__setitem__("v", v)),
    "list": (lambda m: setattr(m, "l", [1.0]), lambda m: m.l[0], lambda m, v: m.l.__setitem__(0, v)),
    "set": (lambda m: setattr(m, "s", {1.0}), lambda m: max(m.s),
            lambda m, v: (m.s.clear(), m.s.add(v))),
    "tuple_in_list": (lambda m: setattr(m, "t", [(1.0, 0.0)]), lambda m: m.t[0][0],
                      lambda m, v: m.t.__setitem__(0, (v, 0.0))),
    "nested_module": (lambda m: setattr(m.inner, "v", 1.0), lambda m: m.inner.v,
                      lambda m, v: setattr(m.inner, "v", v)),
    "buffer": (lambda m: m.register_buffer("b", torch.ones(())), lambda m: m.b,
               lambda m, v: m.b.fill_(v)),
    "parameter": (lambda m: setattr(m, "p", torch.nn.Parameter(torch.ones(()))),
                  lambda m: m.p, lambda m, v: m.p.data.fill_(v)),
    "closure": (lambda m: setattr(m, "cell", _closure_cell()), lambda m: m.cell[0](),
                lambda m, v: m.cell[1](v)),
    "other_module_global": (lambda m: setattr(_OTHER, f"v{id(m)}", 1.0),
                            lambda m: getattr(_OTHER, f"v{id(m)}"),
                            lambda m, v: setattr(_OTHER, f"v{id(m)}", v)),
    "class_attribute": (lambda m: setattr(type(m), "k", 1.0), lambda m: type(m).k,
                        lambda m, v: setattr(type(m), "k", v)),
    "default_argument": (lambda m: None, lambda m: type(m).forward.__defaults__[0]["v"],
                         lambda m, v: type(m).forward.__defaults__[0].__setitem__("v", v)),
    # the instance's own dict, past __setattr__: Dynamo does not repeat a store there
    # (capture/unguarded_stores.py)
    "instance_dict": (lambda m: m.__dict__.__setitem__("v", 1.0), lambda m: m.__dict__["v"],
                      lambda m, v: m.__dict__.__setitem__("v", v)),
    "vars": (lambda m: vars(m).update(v=1.0), lambda m: vars(m).get("v", 0.0),
             lambda m, v: vars(m).update(v=v)),
    "object_setattr": (lambda m: object.__setattr__(m, "v", 1.0),
                       lambda m: m.__dict__.get("v", 0.0),
                       lambda m, v: object.__setattr__(m, "v", v)),
    # a key absent until the caller adds it, read with a default (Dynamo answers these from
    # the object at trace time with no guard; capture/unguarded_reads.py adds the guard)
    "absent_instance_key": (lambda m: None, lambda m: vars(m).get("w", 1.0),
                            lambda m, v: object.__setattr__(m, "w", v)),
    "absent_instance_key_in": (lambda m: None,
                               lambda m: m.__dict__["w"] if "w" in m.__dict__ else 1.0,
                               lambda m, v: m.__dict__.__setitem__("w", v)),
    "absent_object_key": (lambda m: setattr(m, "o", CallerBox()),
                          lambda m: m.o.__dict__.get("w", 1.0),
                          lambda m, v: m.o.__dict__.__setitem__("w", v)),
    "absent_dict_key_caught": (lambda m: setattr(m, "d", {}), lambda m: _caught(m.d, "w", 1.0),
                               lambda m, v: m.d.__setitem__("w", v)),
    "absent_mapping_key": (lambda m: setattr(m, "mp", CallerMapping()),
                           lambda m: m.mp.get("w", 1.0),
                           lambda m, v: m.mp.data.__setitem__("w", v)),
    "absent_module_global": (lambda m: None, lambda m: getattr(_OTHER, f"w{id(m)}", 1.0),
                             lambda m, v: setattr(_OTHER, f"w{id(m)}", v)),
    "absent_function_attribute": (lambda m: setattr(m, "fn", lambda: None),
                                  lambda m: getattr(m.fn, "w", 1.0),
                                  lambda m, v: setattr(m.fn, "w", v)),
    "absent_module_getattr_hook": (lambda m: setattr(m, "lazy", _lazy_module()),
                                   lambda m: getattr(m.lazy, "w", 1.0),
                                   lambda m, v: m.lazy.values.__setitem__("w", v)),
    # other containers: a deque, a defaultdict, a numpy array, a tensor attribute that is
    # no buffer, an attribute of a plain namespace object, a list in a dict in a list
    "deque": (lambda m: setattr(m, "dq", collections.deque([1.0], maxlen=4)),
              lambda m: m.dq[-1], lambda m, v: m.dq.append(v)),
    "defaultdict": (lambda m: setattr(m, "dd", collections.defaultdict(lambda: 1.0)),
                    lambda m: m.dd["v"], lambda m, v: m.dd.__setitem__("v", v)),
    "numpy_array": (lambda m: setattr(m, "arr", np.ones(1)), lambda m: float(m.arr[0]),
                    lambda m, v: m.arr.__setitem__(0, v)),
    "tensor_attribute": (lambda m: setattr(m, "t", torch.ones(())), lambda m: m.t,
                         lambda m, v: m.t.fill_(v)),
    "namespace": (lambda m: setattr(m, "cfg", types.SimpleNamespace(v=1.0)),
                  lambda m: m.cfg.v, lambda m, v: setattr(m.cfg, "v", v)),
    "nested_containers": (lambda m: setattr(m, "nl", [{"a": [1.0]}]),
                          lambda m: m.nl[0]["a"][0], lambda m, v: m.nl[0]["a"].__setitem__(0, v)),
    # Python's and numpy's random generators, drawn from in forward (their states compared)
    "python_random": (lambda m: None, lambda m: random.random() + 1.0, lambda m, v: None),
    "numpy_random": (lambda m: None, lambda m: float(np.random.rand()) + 1.0,
                     lambda m, v: None),
    # a value made of all a dict's keys (its repr)
    "dict_repr": (lambda m: setattr(m, "rd", {}), lambda m: len(repr(m.rd)) / 10.0,
                  lambda m, v: (m.rd.clear(), m.rd.update({"k" * int(v * 4): 0}))),
}
# What the forward does with it: read it (a flag choosing a branch, a scale), or change it.
USES = ("scale", "branch", "bump")


def _model(place: str, use: str) -> torch.nn.Module:
    """A fresh class per model (class attributes stay apart) whose forward uses `place`."""
    make, read, write = PLACES[place]

    def forward(self, x, opts={"v": 1.0}):  # noqa: B006  (a default object, on purpose)
        value = opts["v"] if place == "default_argument" else read(self)
        if use == "bump" and place not in ("parameter",):  # change the state in forward
            write(self, value + 1 if not isinstance(value, torch.Tensor) else value + 0)
            if isinstance(value, torch.Tensor):
                value.add_(1)  # a buffer bumped in place
        y = self.lin(x)
        if use == "branch" and not isinstance(value, torch.Tensor):
            return y.relu() if value > 1.5 else y.sigmoid()
        return y * value + torch.rand_like(y) * 0  # (an RNG draw)

    cls = type(f"Gen_{place}_{use}", (torch.nn.Module,), {"forward": forward})
    model = cls.__new__(cls)
    torch.nn.Module.__init__(model)
    model.lin, model.inner = torch.nn.Linear(3, 3), torch.nn.Module()
    make(model)
    return model.eval()


def _state(model: torch.nn.Module, place: str) -> object:
    value = PLACES[place][1](model)
    return value.clone() if isinstance(value, torch.Tensor) else copy.deepcopy(value)


CASES = list(itertools.product(PLACES, USES))


@pytest.mark.parametrize("place,use", CASES, ids=[f"{p}-{u}" for p, u in CASES])
def test_outputs_and_state_equal_a_plain_twin(place, use):
    torch.manual_seed(0)
    plain = _model(place, use)
    profiled = _model(place, use)
    profiled.load_state_dict(plain.state_dict())
    x = torch.randn(2, 3)
    changes = [None, None, 2.0, None, 0.5, None]  # the state changed between calls
    seen = {"plain": [], "profiled": []}

    def run(model, key):
        torch.manual_seed(1)
        random.seed(1)
        np.random.seed(1)
        for change in changes:
            if change is not None:
                PLACES[place][2](model, change)
            out = model(x)
            seen[key].append((out, _state(model, place), torch.get_rng_state(),
                              (random.getstate(), repr(np.random.get_state()))))

    run(plain, "plain")
    with pyfxprof.Profiler(profiled) as p:
        run(profiled, "profiled")
    for (a, sa, ra, pa), (b, sb, rb, pb) in zip(seen["plain"], seen["profiled"]):
        assert torch.equal(a, b)
        assert (torch.equal(sa, sb) if isinstance(sa, torch.Tensor) else sa == sb)
        assert torch.equal(ra, rb) and pa == pb
    assert profiled.forward.__func__ is type(profiled).forward  # the class's, put back
    timed = sum(prof.n_runs for prof in p.profiles)
    untimed = sum(p._untimed.values())
    assert timed + untimed == len(changes)  # every call timed, or counted with its reason


def test_a_cached_call_fills_its_cache_as_without_the_profiler():
    """A forward calling a functools.lru_cache'd function reads the cache's answer (Dynamo
    would trace past the cache: capture/unguarded_reads.py makes the call a graph break)."""
    def twin():
        settings = {"scale": 1.0}
        cached = functools.lru_cache(maxsize=None)(lambda: settings["scale"])
        model = type("Cached", (torch.nn.Module,), {
            "forward": lambda self, x: self.lin(x) * cached()})()
        torch.manual_seed(0)
        model.lin = torch.nn.Linear(3, 3)
        return model.eval(), cached, settings

    (plain, plain_cache, plain_settings), (profiled, profiled_cache, settings) = twin(), twin()
    x = torch.randn(2, 3)
    with pyfxprof.Profiler(profiled) as p:
        for call in range(4):
            if call == 2:  # (the cache keeps its first answer)
                plain_settings["scale"] = settings["scale"] = 3.0
            assert torch.equal(plain(x), profiled(x))
    assert plain_cache.cache_info() == profiled_cache.cache_info()
    assert sum(prof.n_runs for prof in p.profiles) + sum(p._untimed.values()) == 4


# Ways a forward writes its own tensors in place that bump no version counter the Profiler can
# read (through `.data`, a view, under no_grad): each must happen once per call, as without
# the Profiler (capture/storage_writes.py).
WRITES = {
    "parameter_data_add": lambda m: m.lin.bias.data.add_(0.1),
    "parameter_no_grad_mul": lambda m: _no_grad(lambda: m.lin.weight.mul_(0.9)),
    "parameter_view_write": lambda m: m.lin.bias.data[:1].add_(1.0),
    "parameter_copy": lambda m: m.lin.bias.data.copy_(m.lin.bias.data * 2),
    "buffer_data_add": lambda m: m.count.data.add_(1),
    "buffer_index_put": lambda m: m.count.data.index_put_((torch.tensor([0]),),
                                                           torch.tensor([5.0]), accumulate=True),
}


def _no_grad(write):
    with torch.no_grad():
        return write()


class _Writer(torch.nn.Module):
    def __init__(self, write):
        super().__init__()
        self.lin, self.write = torch.nn.Linear(3, 3), write
        self.register_buffer("count", torch.zeros(2))

    def forward(self, x):
        y = self.lin(x) + self.count.sum()
        self.write(self)
        return y


def _beside_a_plain_twin(plain: torch.nn.Module, same_state, calls: int = 4):
    """`calls` calls of `plain` and of a deep copy under the Profiler, in turn: equal outputs
    and `same_state(plain, profiled)` after each; every call timed or counted. Returns
    (the Profiler, the copy, the calls timed)."""
    profiled = copy.deepcopy(plain)
    x = torch.randn(2, 3)
    with pyfxprof.Profiler(profiled) as p:
        for _ in range(calls):
            assert torch.equal(plain(x), profiled(x))
            same_state(plain, profiled)
    timed = sum(prof.n_runs for prof in p.profiles)
    assert timed + sum(p._untimed.values()) == calls
    return p, profiled, timed


def _same_tensors(plain, profiled):
    for a, b in zip(plain.state_dict().values(), profiled.state_dict().values()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("how", WRITES)
def test_state_written_in_place_without_a_version_bump_is_written_once_per_call(how):
    torch.manual_seed(0)
    _, _, timed = _beside_a_plain_twin(_Writer(WRITES[how]).eval(), _same_tensors)
    assert timed >= 3  # the first call makes the capture; the later ones are timed


# Ways a forward writes an attribute of its own module past __setattr__, the key absent until
# the first call writes it and read back with a default: Dynamo neither guards the read nor
# repeats the store with a new value (torch.compile returns stale outputs), so the Profiler
# must not run such a call from Dynamo's code (capture/unguarded_stores.py).
PAST_SETATTR = {
    "instance_dict_item": lambda m, v: m.__dict__.__setitem__("n", v),
    "vars_update": lambda m, v: vars(m).update(n=v),
    "object_setattr": lambda m, v: object.__setattr__(m, "n", v),
    "dict_setdefault_then_item": lambda m, v: (m.__dict__.setdefault("n", 0),
                                               m.__dict__.__setitem__("n", v)),
}


class _Counter(torch.nn.Module):
    def __init__(self, write):
        super().__init__()
        self.lin, self.write = torch.nn.Linear(3, 3), write

    def forward(self, x):
        self.write(self, self.__dict__.get("n", 0) + 1)
        return self.lin(x) * self.__dict__["n"]


@pytest.mark.parametrize("how", PAST_SETATTR)
def test_a_counter_written_past_setattr_counts_every_call(how):
    torch.manual_seed(0)

    def same_count(plain, profiled):
        assert plain.n == profiled.n
    p, profiled, timed = _beside_a_plain_twin(_Counter(PAST_SETATTR[how]).eval(), same_count)
    assert profiled.n == 4
    if not timed:  # not run from Dynamo's code: the reason names the store
        assert any("without a guard" in reason for reason in p._untimed)


# The caller's tensors after the loop: no attribute Dynamo keeps on a tensor (its dynamic
# marks, under any name) is left on them, whatever the signature and sizes of the calls
# (capture/dynamo.py puts them back as they were; a mark the caller set stays).
class _Memory(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x, mem, extra=None, pair=()):
        out = self.fc(x) + mem.mean(1)
        if extra is not None:
            out = out + extra.sum()
        for t in pair:
            out = out + t.mean()
        return out


SIGNATURES = {
    "positional": lambda mem: ((torch.zeros(2, 4), mem), {}),
    "keyword": lambda mem: ((torch.zeros(2, 4),), {"mem": mem, "extra": torch.ones(3)}),
    "nested": lambda mem: ((torch.zeros(2, 4), mem), {"pair": [torch.ones(2), torch.ones(5)]}),
}


@pytest.mark.parametrize("signature", SIGNATURES)
@pytest.mark.parametrize("lengths", [(8, 8, 8), (3, 5, 9), (6, 6, 2)])
@pytest.mark.parametrize("caller_marked", [False, True])
def test_the_callers_tensors_keep_no_dynamo_mark(signature, lengths, caller_marked):
    def marks(tensors):
        return [sorted(k for k in vars(t) if "dynamo" in k) for t in tensors]

    model = _Memory().eval()
    calls = [SIGNATURES[signature](torch.zeros(2, n, 4)) for n in lengths]
    tensors = [t for args, kwargs in calls for t in (*args, *kwargs.values())
               if isinstance(t, torch.Tensor)]
    tensors += [t for _, kwargs in calls for t in kwargs.get("pair", ())]
    if caller_marked:
        torch._dynamo.maybe_mark_dynamic(calls[0][0][0], 0)
    before = marks(tensors)
    with pyfxprof.Profiler(model):
        for args, kwargs in calls:
            model(*args, **kwargs)
    assert marks(tensors) == before
    # and another model compiled later takes them as it would have
    other = torch.compile(torch.nn.Linear(4, 4), backend="eager")
    assert other(calls[-1][0][0]).shape == (2, 4)
