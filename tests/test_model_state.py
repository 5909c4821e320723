"""Tests of evaluation_mode and grad_context."""

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
