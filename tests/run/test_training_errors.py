"""profile(backward=True)'s refusals name the real cause in one line (run/training.py): a loss_fn
that is no function, raises, or returns a tensor the model's output did not make; capture='whole';
a model with nothing to differentiate. And profile() leaves the global random state alone."""

import pytest
import torch

import pyfxprof
from pyfxprof.errors import ArgumentError, PyfxprofError

LINEAR, X = torch.nn.Linear(4, 4), torch.randn(2, 4)


def _train(model=LINEAR, **options):
    return pyfxprof.profile(model, (X,), runs=2, warmup=1, backward=True, progress=False,
                            **options)


def _boom(output):
    raise RuntimeError("boom in the loss")


@pytest.mark.parametrize("options, error, message", [
    (dict(loss_fn=5), ArgumentError, "loss_fn must be a function of the model's output"),
    (dict(loss_fn=_boom), PyfxprofError, "^loss_fn raised RuntimeError: boom in the loss$"),
    (dict(loss_fn=lambda out: torch.ones((), requires_grad=True)), PyfxprofError,
     "loss_fn returned a tensor not computed from the model's output"),
    (dict(loss_fn=lambda out: torch.ones((), requires_grad=True) * 2), PyfxprofError,
     "loss_fn returned a tensor not computed from the model's output"),
    (dict(capture="whole"), PyfxprofError, "capture='whole' times the model as one node"),
    (dict(model=torch.nn.ReLU()), PyfxprofError, "no parameter of this model .* requires grad"),
])
def test_refusals_name_the_real_cause_in_one_line(options, error, message):
    with pytest.raises(error, match=message) as raised:
        _train(**options)
    assert "\n" not in str(raised.value)
    assert "buffer cap" not in str(raised.value) and "module hooks" not in str(raised.value)


def test_a_loss_of_the_output_is_accepted():
    prof = _train(loss_fn=lambda out: (out ** 2).mean())
    assert prof.backward_samples is not None


class Dropping(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear, self.drop = torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.linear(x))


@pytest.mark.parametrize("options", [dict(), dict(backward=True),
                                     dict(backward=True, capture="dynamo"),
                                     dict(capture="hooks")])
def test_the_global_random_state_is_left_as_it_was(options):
    model = Dropping().train()
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    pyfxprof.profile(model, (X,), runs=2, warmup=1, progress=False, **options)
    assert torch.equal(torch.rand(3), expected)  # the next draw is the first after the seed
