"""Tests of capture.placement: the model copied (never moved in place) and nested inputs moved."""

import pytest
import torch

from pyfxprof.capture.inputs import BoundInputs
from pyfxprof.capture.placement import place_on_device
from pyfxprof.errors import PyfxprofError


def test_model_is_copied_and_nested_inputs_move_to_the_device():
    model = torch.nn.Linear(2, 2)
    inputs = BoundInputs((torch.zeros(1, 2), [torch.ones(1)]), {"mask": {"m": torch.ones(1)},
                                                                "n": 3})
    placed, moved = place_on_device(model, inputs, "meta")
    assert placed is not model and placed.weight.device.type == "meta"
    assert model.weight.device.type == "cpu"
    assert moved.args[0].device.type == "meta" and moved.args[1][0].device.type == "meta"
    assert moved.kwargs["mask"]["m"].device.type == "meta" and moved.kwargs["n"] == 3
    assert isinstance(moved.args[1], list)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message without a GPU")
def test_cuda_without_a_gpu_is_a_one_line_error():
    with pytest.raises(PyfxprofError, match="torch sees no CUDA GPU"):
        place_on_device(torch.nn.ReLU(), (torch.zeros(1),), "cuda")
