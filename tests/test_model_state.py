"""Tests of evaluation_mode and grad_context; profiling in every capture mode leaves the model
as it was (tensor identity, state, flags, hooks, buffer versions)."""

import pytest
import torch

from pyfxprof.capture.model_state import evaluation_mode, grad_context


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
            "grad": [p.requires_grad for p in model.parameters()]}


@pytest.mark.parametrize("options", [
    {"capture": "fx"}, {"capture": "fx", "leaf_modules": [Counting]}, {"capture": "hooks"},
    {"capture": "whole"}, {"capture": "fx", "mode": "interpreter"}])
def test_profiling_never_changes_the_model(options):
    from pyfxprof.run.runner import profile
    model = Counting().train()
    before = snapshot(model)
    profile(model, (torch.randn(2, 4),), runs=3, warmup=1, progress=False, **options)
    after = snapshot(model)
    assert after["ids"] == before["ids"] and after["flags"] == before["flags"]
    assert after["hooks"] == before["hooks"] and after["versions"] == before["versions"]
    assert after["grad"] == before["grad"]
    assert all(torch.equal(before["state"][k], v) for k, v in model.state_dict().items())
    assert not model.steps.is_inference()
    model.steps.zero_()
    model.load_state_dict(before["state"])


def test_a_second_thread_profiling_the_same_model_is_refused_and_flags_survive():
    import threading

    from pyfxprof.errors import PyfxprofError
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
