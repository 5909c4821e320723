"""Tests of evaluation_mode and grad_context; profiling in every capture mode leaves the model
as it was (tensor identity, state, flags, hooks, buffer versions)."""

import warnings

import pytest
import torch

from pyfxprof.capture.model_state import evaluation_mode, grad_context
from pyfxprof.capture.tracing import CaptureFallbackWarning
from pyfxprof.errors import PyfxprofError


def test_flags_are_restored_even_after_an_exception():
    model = torch.nn.Sequential(torch.nn.Dropout(), torch.nn.Dropout().eval())
    try:
        with evaluation_mode(model):
            assert not any(m.training for m in model.modules())
            raise ValueError("boom")
    except ValueError:
        pass
    assert [m.training for m in model.modules()] == [True, True, False]


def test_grad_context():
    with grad_context(False):
        assert torch.is_inference_mode_enabled()
    with grad_context(True):
        assert not torch.is_inference_mode_enabled()


class Counting(torch.nn.Module):
    """A model whose forward rebinds a buffer, as step counters do."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.steps = self.steps + 1
        return self.lin(x).relu()


def snapshot(model):
    return {"ids": [(n, id(t)) for n, t in list(model.named_buffers())
                    + list(model.named_parameters())],
            "state": {k: v.clone() for k, v in model.state_dict().items()},
            "flags": [m.training for m in model.modules()],
            "hooks": [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules()],
            "versions": [t._version for t in model.buffers()],
            "pointers": [t.data_ptr() for t in model.state_dict().values()],
            "grad": [p.requires_grad for p in model.parameters()]}


class InPlaceState(torch.nn.Module):
    """A model whose forward changes buffers in place (not rebinding them)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("running", torch.ones(4))

    def forward(self, x):
        self.count.add_(1)
        self.running.mul_(0.9)
        return self.lin(x).relu() + self.running


class TrainBatchNorm(torch.nn.Module):
    """BatchNorm in train mode whose statistics every call would move (and a counter)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.bn = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        return torch.nn.functional.batch_norm(self.lin(x), self.bn.running_mean,
                                              self.bn.running_var, training=True) + self.bn(x)


MODELS = [Counting, InPlaceState, TrainBatchNorm]
OPTIONS = [{"capture": "fx"}, {"capture": "fx", "leaf_modules": ["lin"]}, {"capture": "dynamo"},
           {"capture": "hooks"}, {"capture": "whole"}, {"capture": "fx", "mode": "interpreter"}]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("make", MODELS)
def test_profiling_never_changes_the_model(make, options):
    from pyfxprof.run.runner import profile
    model = make().train()
    before = snapshot(model)
    refused = make is Counting and options["capture"] == "fx"  # a graph cannot assign
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no parameter changed: nothing to warn about
        warnings.filterwarnings("ignore", category=CaptureFallbackWarning)
        try:
            profile(model, (torch.randn(2, 4),), runs=3, warmup=1, progress=False, **options)
        except PyfxprofError as error:
            assert refused and "forward assigns 'steps'" in str(error), error
        else:
            assert not refused
    after = snapshot(model)
    assert after["ids"] == before["ids"] and after["flags"] == before["flags"]
    assert after["hooks"] == before["hooks"] and after["grad"] == before["grad"]
    assert after["pointers"] == before["pointers"]
    for key, value in model.state_dict().items():
        assert torch.equal(before["state"][key], value), key
    if make is Counting:  # nothing changed in place: nothing copied back
        assert after["versions"] == before["versions"]
    assert not any(t.is_inference() for t in model.buffers())
    model.load_state_dict(before["state"])
    for tensor in model.buffers():
        tensor.zero_()


def test_a_parameter_changed_in_place_is_warned_about():
    class Drift(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(4))

        def forward(self, x):
            self.w.data.add_(1)  # .data: no version moves on the parameter itself
            with torch.no_grad():
                self.w.mul_(1.0)
            return x * self.w

    with pytest.warns(UserWarning, match=r"changed parameter\(s\) w in place"):
        profile_model(Drift(), capture="whole")


def profile_model(model, **options):
    from pyfxprof.run.runner import profile
    return profile(model, (torch.randn(2, 4),), runs=2, warmup=0, progress=False, **options)


def test_buffers_changed_in_place_are_copied_back_into_the_same_tensors():
    model = InPlaceState()
    count, running = model.count, model.running
    pointer = running.data_ptr()
    with evaluation_mode(model), torch.inference_mode():
        model(torch.randn(2, 4))
        assert model.count.item() == 1
    assert model.count is count and model.running is running
    assert running.data_ptr() == pointer and count.item() == 0
    assert running.tolist() == [1.0] * 4


def test_a_second_thread_profiling_the_same_model_is_refused_and_flags_survive():
    import threading

    from pyfxprof.run.runner import profile
    model = Counting().train()
    inside, release, errors = threading.Event(), threading.Event(), []

    def first():
        with evaluation_mode(model):
            inside.set()
            release.wait(30)

    thread = threading.Thread(target=first)
    thread.start()
    inside.wait(30)
    try:
        profile(model, (torch.randn(2, 4),), runs=2, warmup=0, progress=False)
    except PyfxprofError as error:
        errors.append(str(error))
    release.set()
    thread.join()
    assert errors and errors[0].startswith("this Counting is already being profiled in another "
                                           "thread") and "\n" not in errors[0]
    assert all(m.training for m in model.modules())
    with evaluation_mode(model), evaluation_mode(model):  # one thread may nest
        assert not model.training
    assert model.training
    profile(model, (torch.randn(2, 4),), runs=2, warmup=0, progress=False)  # free again


def test_an_input_requiring_grad_is_profiled():
    from pyfxprof.run.runner import profile
    x = torch.randn(2, 4, requires_grad=True)
    prof = profile(Counting(), (x,), runs=2, warmup=0, progress=False)
    assert prof.n_runs == 2 and x.requires_grad and x.grad is None


def test_numeric_mode_reads_autocast_dtypes_and_memory_formats():
    from pyfxprof.capture.model_state import memory_format, numeric_mode
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), torch.nn.Linear(2, 2).double())
    images = torch.randn(1, 3, 4, 4).to(memory_format=torch.channels_last)
    plain = numeric_mode(model, {"x": images, "ids": torch.zeros(2, dtype=torch.int64)})
    assert plain == {"autocast": {}, "param_dtypes": ["float32", "float64"],
                     "input_dtypes": ["float32", "int64"],
                     "input_memory_formats": ["channels_last", "contiguous"]}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert numeric_mode(model, (images,))["autocast"] == {"cpu": "bfloat16"}
    assert numeric_mode(model, (images,))["autocast"] == {}  # read where it is called
    assert memory_format(torch.randn(4, 4).t()) == "strided"
    assert memory_format(torch.randn(1, 2, 3, 3, 3).to(
        memory_format=torch.channels_last_3d)) == "channels_last_3d"
