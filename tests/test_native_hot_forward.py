"""_C.hot_forward (csrc/hot_forward.cpp): the Profiler's forward with its hot path in C. An
armed call of the set thread whose Dynamo guards (if any) hold is run(args) and one log
entry; every other call goes to the general path; a failing run is noted and re-raised as
it is."""

import functools
import inspect
import threading

import pytest
import torch

from pyfxprof import _C
from pyfxprof.timing.native import logged_rows
from pyfxprof.loop.call_groups import args_key


class Model(torch.nn.Module):
    def forward(self, x, scale: float = 1.0):
        return x * scale


class ClassFlagModel(Model):
    """A model whose class defines `training` (a property over a class-wide flag)."""

    flag = True

    @property
    def training(self):
        return ClassFlagModel.flag

    @training.setter
    def training(self, value):
        ClassFlagModel.flag = value


def _hot(run=lambda call: call[0] + 1, model=None, guards=None):
    model, armed, log, failures, general = model or Model(), {}, _C.logged_calls(8), [], []
    hot = _C.hot_forward(armed, model, torch.Tensor, log, args_key,
                         lambda group, error: failures.append((group, error)))
    hot.general = lambda *args, **kwargs: general.append((args, kwargs)) or "general"
    x = torch.zeros(2)
    armed[args_key((x,))] = ("group", run, model.training, 7, guards)
    return hot, model, x, log, failures, general


def test_an_armed_call_of_the_set_thread_is_one_run_and_one_log_entry():
    hot, _, x, log, _, general = _hot()
    hot.thread, hot.first_call = threading.get_ident(), 1
    assert torch.equal(hot(x), x + 1) and torch.equal(hot(x), x + 1)
    assert not general and hot.calls == 2 and hot.own_ns_after >= 0
    (start, end, index, own, calls, first), second = logged_rows(log).tolist()
    assert end >= start and index == 7 and own >= 0 and (calls, first) == (1, 1)
    assert list(second[4:]) == [2, 0]


@pytest.mark.parametrize("case", ["no thread", "keywords", "other key", "other training",
                                  "other thread"])
def test_every_other_call_goes_to_the_general_path(case):
    hot, model, x, log, _, general = _hot()
    hot.thread = 0 if case == "no thread" else threading.get_ident()
    if case == "other training":
        model.eval()
    if case == "other thread":
        worker = threading.Thread(target=hot, args=(x,))
        worker.start()
        worker.join()
    elif case == "keywords":
        assert hot(x, scale=2.0) == "general"
    else:
        assert hot(torch.zeros(3) if case == "other key" else x) == "general"
    assert len(general) == 1 and not log and hot.calls == 0


class Check:
    """A stand-in for Dynamo's guard check: its verdict per call, with the frame locals it
    saw (their "args" as they were during the check)."""

    def __init__(self, verdict):
        self.verdict, self.seen = verdict, []

    def __call__(self, frame_locals):
        self.seen.append(dict(frame_locals))
        if isinstance(self.verdict, Exception):
            raise self.verdict
        return self.verdict


@pytest.mark.parametrize("verdict", [True, 1, False, 0, None, RuntimeError("guard failed")])
def test_dynamo_guards_are_checked_on_each_call_with_its_arguments(verdict):
    check, frame_locals = Check(verdict), {"target": "forward", "args": None, "kwargs": {}}
    hot, _, x, log, _, general = _hot(guards=(check, frame_locals))
    hot.thread = threading.get_ident()
    for _ in range(2):
        out = hot(x)
        if verdict and not isinstance(verdict, Exception):
            assert torch.equal(out, x + 1)
        else:
            assert out == "general"
    taken = 2 if verdict and not isinstance(verdict, Exception) else 0
    assert len(log) == taken and len(general) == 2 - taken
    assert [seen["args"][0] is x and seen["target"] == "forward" for seen in check.seen] == [True] * 2
    assert frame_locals["args"] is None  # the call's arguments are not kept past the check


@pytest.mark.parametrize("guards", [(print,), (Check(True), []), "check"])
def test_malformed_guards_send_the_call_to_the_general_path(guards):
    hot, _, x, log, _, general = _hot(guards=guards)
    hot.thread = threading.get_ident()
    assert hot(x) == "general" and len(general) == 1 and not log


def test_a_passing_threads_calls_run_the_models_own_forward_counted():
    """A step that records nothing: the passing thread's calls (keywords too) are own(...),
    each counted once, a call own makes of the model itself passing uncounted; other
    threads' calls go to the general path; nothing is logged."""
    hot, _, x, log, _, general = _hot()
    seen = []

    def own(x, scale=1.0, nested=False):
        seen.append(hot.calls)
        return hot(x, scale=scale) if nested else x * scale

    hot.own, hot.passing = own, threading.get_ident()
    assert torch.equal(hot(x), x) and torch.equal(hot(x, scale=2.0), 2 * x)
    assert torch.equal(hot(x, scale=3.0, nested=True), 3 * x)
    assert seen == [1, 2, 3, 3] and hot.calls == 3
    worker = threading.Thread(target=hot, args=(x,))
    worker.start()
    worker.join()
    assert len(general) == 1 and not log and hot.calls == 3
    hot.passing = 0
    assert hot(x) == "general" and hot.calls == 3


def test_a_passing_threads_call_that_raises_leaves_it_passing():
    hot, _, x, *_ = _hot()
    error = ValueError("the model's own")

    def own(x):
        raise error

    hot.own, hot.passing = own, threading.get_ident()
    with pytest.raises(ValueError) as raised:
        hot(x)
    hot.own = lambda x: x + 2
    assert raised.value is error and torch.equal(hot(x), x + 2) and hot.calls == 2


def test_a_training_flag_its_class_defines_is_read_through_the_class():
    hot, model, x, log, _, general = _hot(model=ClassFlagModel())
    hot.thread = threading.get_ident()
    assert torch.equal(hot(x), x + 1) and len(log) == 1
    model.__dict__["training"] = True  # shadowed: the class's property is the flag
    ClassFlagModel.flag = False
    try:
        assert hot(x) == "general" and len(general) == 1 and len(log) == 1
    finally:
        ClassFlagModel.flag = True


@pytest.mark.parametrize("path", ["thread", "passing"])
def test_a_call_under_a_compiled_caller_goes_to_the_general_path(path):
    hot, _, x, log, _, general = _hot()
    hot.own = lambda x: x + 1
    setattr(hot, path, threading.get_ident())

    @torch.compile(backend="eager")
    def caller(x):
        y = x * 1
        torch._dynamo.graph_break()
        return hot(y)  # runs eagerly, with Dynamo's frame callback set

    try:
        assert caller(x) == "general" and len(general) == 1 and not log and hot.calls == 0
    finally:
        torch._dynamo.reset()
    assert torch.equal(hot(x), x + 1) and hot.calls == 1  # no compiled caller: the hot path
    assert len(log) == (path == "thread")


def test_a_failing_run_is_noted_and_its_error_goes_on_unchanged():
    error = ValueError("the model's own")

    def run(call):
        raise error

    hot, _, x, log, failures, _ = _hot(run)
    hot.thread = threading.get_ident()
    with pytest.raises(ValueError) as raised:
        hot(x)
    assert raised.value is error and failures == [("group", error)] and not log


def test_it_wraps_the_models_forward_for_inspect():
    hot, model, *_ = _hot()
    functools.update_wrapper(hot, model.forward)
    assert list(inspect.signature(hot).parameters) == ["x", "scale"]
    assert hot.__name__ == "forward" and hot.__wrapped__ == model.forward


def test_hot_forward_checks_its_arguments():
    with pytest.raises(TypeError):
        _C.hot_forward([], Model(), torch.Tensor, _C.logged_calls(1), args_key, print)  # a dict
    with pytest.raises(TypeError, match="must be a LoggedCalls"):
        _C.hot_forward({}, Model(), torch.Tensor, print, args_key, print)
    with pytest.raises(TypeError, match="must be callable"):
        _C.hot_forward({}, Model(), torch.Tensor, _C.logged_calls(1), 1, print)
    with pytest.raises(TypeError, match="cannot create"):
        _C.HotForward()
