"""Tests for pyfxprof.capture.call_spec: a call recorded as JSON and rebuilt with fresh tensors
of the same shapes, dtypes, strides and integer ranges (generated cases)."""

import json

import pytest
import torch
from hypothesis import given, settings, strategies as st

from pyfxprof.capture.call_spec import call_spec, decode, encode, fresh_tensor, opaque_types

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32, torch.uint8,
          torch.bool]


@st.composite
def tensors(draw):
    shape = draw(st.lists(st.integers(1, 5), min_size=0, max_size=4))
    dtype = draw(st.sampled_from(DTYPES))
    base = torch.randint(0, 50, shape).to(dtype) if dtype != torch.bool else (
        torch.rand(shape) < 0.5)
    if len(shape) >= 2 and draw(st.booleans()):
        base = base.transpose(0, 1)  # non-contiguous strides
    return base


@settings(max_examples=60, deadline=None)
@given(tensors())
def test_a_rebuilt_tensor_has_the_recorded_shape_dtype_stride_and_range(tensor):
    spec = json.loads(call_spec((tensor,), {}))["args"][0]
    rebuilt = fresh_tensor(spec)
    assert (rebuilt.shape, rebuilt.dtype, rebuilt.stride()) == (
        tensor.shape, tensor.dtype, tensor.stride())
    if tensor.numel() and not tensor.is_floating_point() and tensor.dtype != torch.bool:
        assert int(rebuilt.min()) >= int(tensor.min()) and int(rebuilt.max()) <= int(tensor.max())


LITERALS = [1, 2.5, True, None, "mean", [1, 2], (3, (4, None)), {"dim": -1},
            torch.float16, torch.channels_last, torch.device("cpu"), slice(None, 3, 2), Ellipsis]


@pytest.mark.parametrize("value", LITERALS, ids=repr)
def test_literals_come_back_as_they_were_through_json(value):
    spec = json.loads(json.dumps(encode(value)))
    assert decode(spec) == value


def test_the_kwargs_and_nesting_keep_their_structure():
    spec = json.loads(call_spec((torch.zeros(2), [torch.ones(3), 4]), {"out_dtype": torch.int8}))
    args, kwargs = decode(spec["args"]), decode({"dict": spec["kwargs"]})
    assert args[0].shape == (2,) and args[1][0].shape == (3,) and args[1][1] == 4
    assert kwargs == {"out_dtype": torch.int8}


def test_an_unknown_object_is_opaque_and_not_rebuilt():
    class Cache:
        pass
    spec = json.loads(call_spec((torch.zeros(1), Cache()), {}))
    assert opaque_types(spec) == ["Cache"]
    with pytest.raises(ValueError, match="Cache"):
        decode(spec["args"])
