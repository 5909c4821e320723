"""Tests of pyfxprof.cli.commands.model_args: --input texts as positional and keyword inputs."""

import pytest
import torch

from pyfxprof.capture.inputs import BoundInputs
from pyfxprof.cli.commands.model_args import parse_inputs
from pyfxprof.cli.main import main
from pyfxprof.errors import PyfxprofError


def test_positional_keyword_and_mixed_inputs():
    assert [x.shape for x in parse_inputs(["2x3", "4"])] == [(2, 3), (4,)]
    keywords = parse_inputs(["input_ids=1x16:int64", "attention_mask=1x16:int64"])
    assert list(keywords) == ["input_ids", "attention_mask"]
    assert keywords["input_ids"].dtype == torch.int64
    mixed = parse_inputs(["1x3x8x8", "scale=1"])
    assert isinstance(mixed, BoundInputs) and mixed.args[0].shape == (1, 3, 8, 8)
    assert list(mixed.kwargs) == ["scale"]


@pytest.mark.parametrize("texts, message", [
    (["x=2", "3"], "positional input '3' after a keyword input"),
    (["x=2", "x=3"], "keyword input 'x' given twice"),
])
def test_bad_input_orders_are_one_line_errors(texts, message):
    with pytest.raises(PyfxprofError, match=message):
        parse_inputs(texts)


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x, *, scale, **kwargs):
        return self.linear(x) * scale


def test_profile_command_with_keyword_inputs(capsys):
    code = main(["profile", "tests.cli.commands.test_model_args:Scaled", "--input", "2x8",
                 "--input", "scale=1", "--runs", "2", "--warmup", "0"])
    out = capsys.readouterr().out
    assert code == 0 and "capture fx" in out and " linear " in out


def test_keyword_a_model_does_not_take_is_a_one_line_error(capsys):
    code = main(["profile", "torch.nn:ReLU", "--input", "2x8", "--input", "bias=1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert "the inputs do not match forward(input: torch.Tensor)" in err
