"""Augmented assignments (`out += identity`) are captured in place, as the model runs them: the
graph computes what the model computes, and profile() never changes the caller's inputs."""

import operator

import torch
import torchvision

import pyfxprof
from pyfxprof.capture.tracing import capture


class Residual(torch.nn.Module):
    """`out += x; out *= 2` on a Linear's output, and `x += 1` on the (copied) input itself."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        out = self.lin(x)
        out += x
        out *= 2
        x += 1
        return out + x


class Aliased(torch.nn.Module):
    """`y = h; y += 1`: h is the same tensor, so it changes too; `n` an int, so it does not."""

    def forward(self, x):
        h = x.relu()
        y = h
        y += 1
        n = x.size(0)
        total = n
        total += 1
        return h * 2, y, x.new_zeros(n) + total


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_augmented_assignments_are_recorded_as_in_place_operators():
    model = Residual()
    gm = capture(model).graph_module
    assert _targets(gm)[:3] == [operator.iadd, operator.imul, operator.iadd]
    x = torch.randn(3, 4)
    expected_input, expected = x.clone(), model(x.clone())
    torch.testing.assert_close(gm(x), expected, rtol=0, atol=0)
    torch.testing.assert_close(x, expected_input + 1)  # the graph changes its input as forward does


def test_aliases_see_in_place_changes_as_in_the_model():
    model = Aliased()
    gm = capture(model).graph_module
    x = torch.randn(3)
    for ours, theirs in zip(gm(x), model(x)):  # FX's code writes `relu += 1; iadd = relu`
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    interpreted = torch.fx.Interpreter(gm).run(x)
    for ours, theirs in zip(interpreted, model(x)):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0)


def test_resnet18_residual_adds_run_in_place_and_compute_the_models_output():
    model, x = torchvision.models.resnet18().eval(), torch.randn(1, 3, 32, 32)
    gm = capture(model).graph_module
    assert _targets(gm).count(operator.iadd) == 8 and operator.add not in _targets(gm)
    with torch.inference_mode():
        torch.testing.assert_close(gm(x), model(x), rtol=0, atol=0)


def test_profile_never_changes_the_callers_inputs():
    model, x = Residual(), torch.randn(3, 4)
    before = x.clone()
    prof = pyfxprof.profile(model, (x,), runs=3, warmup=1, progress=False)
    assert "_operator.iadd" in prof.nodes["target"].tolist()
    torch.testing.assert_close(x, before, rtol=0, atol=0)
    pyfxprof.profile(model, {"x": x}, runs=1, warmup=0, progress=False)
    torch.testing.assert_close(x, before, rtol=0, atol=0)
    # a tensor autograd made refuses deepcopy: copied on its own, outside the caller's graph
    leaf = torch.randn(3, 4, requires_grad=True)
    made = leaf * 1
    kept = made.detach().clone()
    pyfxprof.profile(model, (made,), runs=1, warmup=0, progress=False, grad=True)
    torch.testing.assert_close(made.detach(), kept, rtol=0, atol=0)
    assert made._version == 0 and leaf.grad is None
