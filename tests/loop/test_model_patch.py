"""Tests of routing a model's forward through the Profiler (pyfxprof.loop.model_patch)."""

import inspect

import torch

from pyfxprof.loop.model_patch import ForwardPatch


def test_the_wrapper_sees_every_call_and_keeps_the_signature():
    model, seen = torch.nn.Linear(2, 2), []

    def wrapper(forward, args, kwargs):
        seen.append((args, kwargs))
        return forward(*args, **kwargs)

    signature = inspect.signature(model.forward)
    patch = ForwardPatch(model, wrapper)
    x = torch.zeros(1, 2)
    model(x)
    model(input=x)
    assert inspect.signature(model.forward) == signature
    assert model.forward.__name__ == "forward" and len(seen) == 2
    patch.restore()
    patch.restore()  # idempotent
    model(x)
    assert len(seen) == 2 and "forward" not in vars(model)


def test_an_instance_forward_is_restored_as_the_same_object():
    model = torch.nn.ReLU()
    own = lambda x: x + 1  # noqa: E731
    vars(model)["forward"] = own
    patch = ForwardPatch(model, lambda forward, args, kwargs: forward(*args) * 10)
    assert model(torch.ones(1)).item() == 20.0
    patch.restore()
    assert vars(model)["forward"] is own and model(torch.ones(1)).item() == 2.0


def test_a_compiled_caller_runs_the_profiled_call_eagerly_through_a_graph_break():
    import warnings

    import torch._dynamo  # noqa: F401  (loaded before the block, as transformers does)

    from pyfxprof.loop.profiler import Profiler

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    x = torch.randn(2, 4)
    expected = model(x)
    compiled = torch.compile(model, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Profiler(model) as p:
            out = compiled(x)
    assert torch.equal(out, expected)
    assert [prof.n_runs for prof in p.profiles] == [1]  # profiled, not traced into
    assert not [w for w in caught if "Dynamo does not know" in str(w.message)]
    torch._dynamo.reset()


def test_every_call_of_a_compiled_caller_is_profiled_eagerly():
    import torch._dynamo  # noqa: F401

    from pyfxprof.loop.profiler import Profiler

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    x = torch.randn(2, 4)
    expected = model(x) * 2
    caller = torch.compile(lambda x: model(x) * 2, backend="eager")
    with Profiler(model) as p:
        outputs = [caller(x) for _ in range(3)]  # after the first, the hot path's calls
    assert all(torch.equal(out, expected) for out in outputs)
    assert [prof.n_runs for prof in p.profiles] == [3]
    torch._dynamo.reset()
