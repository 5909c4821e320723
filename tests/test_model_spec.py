"""Tests of pyfxprof.cli.model_spec: import specs and input shapes."""

import pytest
import torch

from pyfxprof.errors import PyfxprofError
from pyfxprof.cli.model_spec import load_model, parse_input


def test_class_factory_and_instance_specs():
    assert isinstance(load_model("torch.nn:ReLU"), torch.nn.ReLU)
    assert type(load_model("tests.fixtures_models:conv_bn_relu")).__name__ == "Sequential"


@pytest.mark.parametrize("spec, message", [
    ("resnet18", "must look like 'package.module:callable'"),
    ("no_such_pkg.mod:Net", "cannot import 'no_such_pkg.mod'"),
    ("torch.nn:NoSuchThing", "has no attribute 'NoSuchThing'"),
    ("tests.fixtures_models:broken_factory", "calling factory .* failed: RuntimeError"),
    ("torch:float32", "not a Module class or factory"),
    ("torch:get_num_threads", "returned a int, not a torch.nn.Module"),
])
def test_bad_specs_give_one_line_errors(spec, message):
    with pytest.raises(PyfxprofError, match=message) as info:
        load_model(spec)
    assert "\n" not in str(info.value)


def test_parse_input_shapes_and_dtypes():
    x = parse_input("5x3x7")
    assert x.shape == (5, 3, 7) and x.dtype == torch.float32
    ids = parse_input("2x4:int64")
    assert ids.dtype == torch.int64 and ids.min() >= 0 and ids.max() < 100
    torch.testing.assert_close(parse_input("3x3"), parse_input("3x3"))  # seeded


@pytest.mark.parametrize("text, message", [("5x", "not a shape"), ("a", "not a shape"),
                                           ("2x2:complex7", "dtype 'complex7' is not one of")])
def test_parse_input_refuses_bad_text(text, message):
    with pytest.raises(PyfxprofError, match=message):
        parse_input(text)


def test_keyword_inputs():
    from pyfxprof.cli.model_spec import parse_input_argument
    name, ids = parse_input_argument("input_ids=1x16:int64")
    assert name == "input_ids" and ids.shape == (1, 16) and ids.dtype == torch.int64
    assert parse_input_argument("1x3")[0] is None


@pytest.mark.parametrize("text, message", [
    ("1ids=1x4", "'1ids' is not a keyword argument name"),
    ("ids=1x", "not a shape like"), ("ids=1x4:int3", "dtype 'int3' is not one of")])
def test_bad_keyword_inputs_give_one_line_errors(text, message):
    from pyfxprof.cli.model_spec import parse_input_argument
    with pytest.raises(PyfxprofError, match=message) as info:
        parse_input_argument(text)
    assert "\n" not in str(info.value)
