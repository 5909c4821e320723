"""Tests of pyfxprof.capture.exported and of the exported path of the ladder: programs made by
torch.export recognised, their graph taken as it is, inputs checked against their range
constraints, the module never switched between eval and train."""

import pytest
import torch
from torch.export import Dim

from pyfxprof.capture.exported import (check_exported_inputs, exported_module, exported_name,
                                       is_exported)
from pyfxprof.capture.inputs import BoundInputs
from pyfxprof.capture.ladder import prepare
from pyfxprof.capture.model_state import evaluation_mode
from pyfxprof.errors import PyfxprofError


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x):
        return self.bn(self.fc(x)).relu()


@pytest.fixture(scope="module")
def program():
    batch = Dim("batch", min=2, max=16)
    return torch.export.export(Net().eval(), (torch.randn(5, 4),),
                               dynamic_shapes=({0: batch},))


def test_recognises_programs_and_their_modules(program):
    assert is_exported(program) and is_exported(program.module())
    assert not is_exported(Net()) and not is_exported(torch.fx.symbolic_trace(Net()))
    module = exported_module(program)
    assert isinstance(module, torch.nn.Module) and is_exported(module)
    assert exported_module(module) is module
    assert exported_name(module) == "Net"


@pytest.mark.parametrize("shape, message", [
    ((32, 4), r"shape\[0\] to be <= 16, but got 32"),
    ((5, 7), r"shape\[1\] to be equal to 4, but got 7"),
])
def test_inputs_outside_the_range_constraints_are_one_line(program, shape, message):
    with pytest.raises(PyfxprofError, match=message) as error:
        check_exported_inputs(program.module(), BoundInputs((torch.randn(*shape),)))
    assert "\n" not in str(error.value) and "dynamic_shapes=" in str(error.value)


def test_other_arguments_than_exported_are_one_line(program):
    with pytest.raises(PyfxprofError, match="its arguments are not those the program was "
                                            "exported with"):
        check_exported_inputs(program.module(), BoundInputs((torch.randn(5, 4), torch.ones(1))))


def test_prepare_takes_the_graph_as_it_is(program):
    module = program.module()
    prepared = prepare(module, (torch.randn(8, 4),))
    assert prepared.captured.mode == "exported" and prepared.captured.graph_module is module
    frame = prepared.frame.set_index("name")
    assert frame.loc["linear", "target"] == "torch.ops.aten.linear.default"
    assert frame.loc["linear", "module_path"] == "fc"
    assert frame.loc["batch_norm", "module_type"] == "BatchNorm1d"
    # lifted parameters are read by get_attr nodes: they belong to their module
    assert frame.loc["fc_weight", "module_path"] == "fc"
    assert frame.loc["fc_weight", "module_type"] == "Linear"
    assert frame.loc["linear", "output_shapes"] == "[8, 3] float32"


@pytest.mark.parametrize("forced", ["auto", "fx", "whole"])
def test_forced_captures(program, forced):
    expected = "whole" if forced == "whole" else "exported"
    assert prepare(program.module(), (torch.randn(8, 4),), forced).captured.mode == expected


def test_rungs_that_would_retrace_are_refused(program):
    with pytest.raises(PyfxprofError, match="capture='hooks' does not apply to an exported"):
        prepare(program.module(), (torch.randn(8, 4),), "hooks")


def test_evaluation_mode_leaves_an_exported_module_as_it_is(program):
    module = program.module()
    with evaluation_mode(module):  # torch refuses eval() on it: never called
        assert module.training
    assert module.training


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x, *, scale=None):
        return self.fc(x) * scale


def test_keyword_inputs_are_checked_as_exported():
    x, scale = torch.randn(3, 4), torch.ones(4)
    module = torch.export.export(Scaled(), (x,), {"scale": scale}).module()
    for given in (BoundInputs((x,), {"scale": scale}), {"x": x, "scale": scale}):
        assert prepare(module, given).captured.mode == "exported"
    with pytest.raises(PyfxprofError, match=r"'scale'.shape\[0\] to be equal to 4, but got 5"):
        prepare(module, BoundInputs((x,), {"scale": torch.ones(5)}))
