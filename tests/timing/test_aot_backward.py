"""AOTAutograd's aten graphs joined to the captured graph's nodes (timing/aot_backward.py)."""

from __future__ import annotations

import torch
import torch.fx as fx

from pyfxprof.timing.aot_backward import AotStep


def _model():
    return torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
                               torch.nn.Dropout(0.5), torch.nn.Linear(6, 2)).train()


def test_every_aten_node_is_joined_to_the_captured_node_it_comes_from():
    gm = fx.symbolic_trace(_model())
    step = AotStep(gm, (torch.randn(5, 6),), 5, "codegen")
    step.reset(2)
    for _ in range(2):
        step.step((torch.randn(5, 6),), lambda y: y.sum())
    timings = step.durations()
    ops = {str(n.target) for n in step.forward_graph.nodes if n.op == "call_function"}
    assert "aten.native_dropout.default" in ops  # dropout in training mode, on the graph
    assert set(step.forward_rows.tolist()) == {0, 1, 2, 3, 4}  # every aten node has a source
    assert set(step.backward_rows.tolist()) == {0, 1, 2, 3, 4}  # ... and so every gradient
    assert timings.intervals.shape == (2, 8) and step.backward_samples.shape == (2, 8)
    assert (step.backward_samples[:, :5] > 0).all() and (timings.intervals[:, :5] > 0).all()
    assert (timings.run_totals >= timings.intervals.sum(1)).all()


def test_a_structured_output_reaches_the_loss_as_the_model_returns_it():
    class Pair(torch.nn.Module):
        def forward(self, x):
            return {"double": x * 2, "shape": 3, "half": (x / 2,)}
    leaf = torch.randn(3, requires_grad=True)
    step = AotStep(fx.symbolic_trace(Pair()), (leaf,), 2, "codegen")
    step.reset(1)
    output = step.step((leaf,), lambda y: y["double"].sum() + y["half"][0].sum())
    assert output["shape"] == 3 and torch.equal(output["double"], leaf.detach() * 2)
    assert torch.equal(leaf.grad, torch.full_like(leaf, 2.5))


def test_the_backward_graph_is_compiled_before_the_first_step():
    step = AotStep(fx.symbolic_trace(_model()), (torch.randn(5, 6),), 5, "codegen")
    assert step.backward is not None and len(step.backward_rows) > 0
