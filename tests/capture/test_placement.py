"""Tests of capture.placement: the model copied (never moved in place) and nested inputs moved."""

import pytest
import torch

from pyfxprof.capture.inputs import BoundInputs
from pyfxprof.capture.placement import _move, place_on_device
from pyfxprof.errors import ArgumentError, PyfxprofError


def test_nested_inputs_move_to_the_device_keeping_their_containers():
    inputs = BoundInputs((torch.zeros(1, 2), [torch.ones(1)]), {"mask": {"m": torch.ones(1)},
                                                                "n": 3})
    moved = _move(inputs, torch.device("meta"))
    assert moved.args[0].device.type == "meta" and moved.args[1][0].device.type == "meta"
    assert moved.kwargs["mask"]["m"].device.type == "meta" and moved.kwargs["n"] == 3
    assert isinstance(moved.args[1], list)
    assert inputs.args[0].device.type == "cpu"


def test_the_meta_device_is_refused_in_one_line():
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ArgumentError, match="device 'meta' runs no operations") as error:
        place_on_device(model, (torch.zeros(1, 2),), "meta")
    assert "\n" not in str(error.value) and model.weight.device.type == "cpu"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_model_is_copied_to_the_gpu_never_moved_in_place():
    model = torch.nn.Linear(2, 2)
    placed, moved = place_on_device(model, (torch.zeros(1, 2),), "cuda")
    assert placed is not model and placed.weight.device.type == "cuda"
    assert model.weight.device.type == "cpu" and moved.args[0].device.type == "cuda"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message without a GPU")
def test_cuda_without_a_gpu_is_a_one_line_error():
    with pytest.raises(PyfxprofError, match="torch sees no CUDA GPU"):
        place_on_device(torch.nn.ReLU(), (torch.zeros(1),), "cuda")
