"""torch.autograd.Functions kept whole by the fx tracer (capture/functions.py)."""

from __future__ import annotations

import pytest
import torch
import torch.fx as fx

from pyfxprof.capture.functions import functions_kept_whole
from pyfxprof.capture.tracing import capture


class _Scale(torch.autograd.Function):
    """Forward doubles; backward returns 10x the gradient (not the forward's derivative)."""

    @staticmethod
    def forward(ctx, x, factor):
        return x * factor

    @staticmethod
    def backward(ctx, grad):
        return 10 * grad, None


class _Net(torch.nn.Module):
    def forward(self, x):
        return torch.relu(_Scale.apply(x, 2.0)) + _Scale.apply(torch.ones(1), 3.0)


def test_a_function_call_is_one_node_running_the_functions_own_backward():
    gm = capture(_Net()).graph_module
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert [n.target.__name__ for n in calls][:2] == ["_Scale.apply", "relu"]
    assert not any(n.target is torch.mul or n.target == "mul" for n in gm.graph.nodes)
    x = torch.tensor([1.0, -1.0], requires_grad=True)
    out = gm(x)
    assert out.tolist() == [5.0, 3.0]  # the call on a constant ran once, at trace time
    out.sum().backward()
    assert x.grad.tolist() == [10.0, 0.0]  # the Function's own backward, through relu
    assert type(out.grad_fn.next_functions[0][0].next_functions[0][0]).__name__ == \
        "_ScaleBackward"


def test_apply_is_restored_after_a_trace_and_after_a_failed_one():
    original = torch.autograd.Function.__dict__["apply"]
    tracer = fx.Tracer()
    with pytest.raises(RuntimeError, match="broke"):
        with functions_kept_whole(tracer):
            raise RuntimeError("broke")
    assert torch.autograd.Function.__dict__["apply"] is original
    assert _Scale.apply(torch.ones(1), 2.0).tolist() == [2.0]


@pytest.mark.parametrize("grad", [False, True])
def test_on_dynamo_a_function_call_is_one_node_in_either_autograd_mode(grad):
    """Dynamo inlines a Function's forward when no gradient is needed and differentiates it
    when one is; allowed in the graph during the capture, it is one call of ``apply``."""
    import pyfxprof
    with torch.set_grad_enabled(grad):
        prof = pyfxprof.profile(_Net(), (torch.tensor([1.0, -1.0]),), capture="dynamo", runs=2,
                                warmup=1, grad=grad, progress=False)
    assert prof.meta["capture_mode"] == "dynamo"
    targets = prof.nodes["target"].tolist()
    assert any(t.endswith("_Scale.apply") for t in targets), targets
    assert not any("mul" in t for t in targets), targets
    assert "scale_apply" in prof.nodes["name"].tolist()
    # the Functions are allowed only while capturing
    from torch._dynamo import trace_rules
    assert id(_Scale) not in trace_rules._allowed_callable_ids


def test_on_dynamo_the_graph_runs_the_functions_own_backward():
    from pyfxprof.capture.dynamo import dynamo_capture
    from pyfxprof.capture.inputs import BoundInputs
    x = torch.tensor([1.0, -1.0], requires_grad=True)
    gm, _ = dynamo_capture(_Net(), BoundInputs((x.detach().clone().requires_grad_(),)))
    names = [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    assert names[0] == "_Scale.apply"
    [out] = gm(x)
    out.sum().backward()
    assert x.grad.tolist() == [10.0, 0.0]
