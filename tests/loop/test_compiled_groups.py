"""The Profiler loop on models Dynamo splits into several graphs (graph breaks): each call
group on the dynamo rung with every graph's nodes timed and the time between graphs a row,
the model's own outputs, and the rows profile() gives for the same model and input."""

import pytest
import torch

import pyfxprof
from pyfxprof.data.outside_graph import graph_only
from pyfxprof.capture.node_table import BETWEEN_GRAPHS

ROWS = ["name", "op", "target", "module_path", "graph"]


class Branches(torch.nn.Module):
    """A data-dependent branch between two layers: torch.fx cannot trace it, Dynamo splits
    it into two graphs."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

    def forward(self, x):
        x = torch.relu(self.a(x))
        if x.sum() > 0:
            x = x * 2
        return self.b(x)


def _profiled(model, x, calls=3):
    """(the Profiler's one Profile of `calls` calls of model(x) under no_grad, the outputs),
    after a first call, which captures (a capture of several graphs is not timed)."""
    with torch.no_grad(), pyfxprof.Profiler(model) as p:
        outputs = [model(x) for _ in range(calls + 1)][1:]
    assert len(p.profiles) == 1, p.summary()
    assert p.profiles[0].n_runs + sum(p._untimed.values()) == calls + 1
    return p.profiles[0], outputs


def test_a_graph_broken_model_is_profiled_graph_by_graph_in_the_loop():
    torch.manual_seed(0)
    model, x = Branches().eval(), torch.randn(4, 8)
    prof, outputs = _profiled(model, x)
    with torch.no_grad():
        expected = model(x)
    assert all(torch.equal(out, expected) for out in outputs)
    meta = prof.meta
    assert meta["capture_mode"] == "dynamo" and meta["graphs"] == 2 and meta["graph_breaks"]
    assert prof.n_runs == 3 and list(prof.nodes["name"])[-1] == BETWEEN_GRAPHS
    assert set(prof.nodes["graph"]) == {0, 1, -1}
    _assert_every_graph_timed(prof)
    assert (prof.samples.sum(axis=1) <= prof.run_totals).all()
    header = prof.table().split("\n\n")[0]
    assert "2 graphs and the Python between them" in header
    reference = pyfxprof.profile(model, (x,), runs=3, warmup=1, progress=False)
    assert prof.nodes[ROWS].equals(reference.nodes[ROWS])


def _assert_every_graph_timed(prof):
    """Each graph's nodes, and the time between graphs (graph -1), took time in every run (a
    trivial node's corrected time may read 0 ns, so nodes are summed per graph)."""
    graphs = prof.nodes["graph"].to_numpy()
    for graph in set(graphs):
        assert (prof.samples[:, graphs == graph].sum(axis=1) > 0).all(), graph


def test_a_graph_broken_segformer_is_profiled_on_dynamo_in_the_loop():
    transformers = pytest.importorskip("transformers")

    def segformer():  # a fresh model: transformers' first call installs hooks (the break)
        config = transformers.SegformerConfig(
            num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
            num_attention_heads=[1, 2], decoder_hidden_size=16, num_labels=3,
            patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2])
        torch.manual_seed(0)
        return transformers.SegformerForSemanticSegmentation(config).eval()

    # Dynamo's automatic dynamic shapes: after this process compiled SegFormer's code at
    # another size (tests/capture/test_graph_breaks.py), a loop capture (dynamic=None) comes
    # back symbolic (sym_sum nodes) where profile()'s (dynamic=False) stays static
    import torch._dynamo
    torch._dynamo.reset()
    x = torch.randn(1, 3, 64, 64)
    model = segformer()
    prof, outputs = _profiled(model, x, calls=2)
    with torch.no_grad():
        expected = model(x).logits
    assert all(torch.equal(out.logits, expected) for out in outputs)
    assert prof.meta["capture_mode"] == "dynamo" and prof.meta["graphs"] >= 2
    assert prof.n_runs == 2  # a run missing a node would be left out
    _assert_every_graph_timed(prof)
    reference = graph_only(pyfxprof.profile(segformer(), (x,), runs=2, warmup=1,
                                            progress=False))  # the loop has no outside row
    assert reference.meta["graphs"] == prof.meta["graphs"]
    assert prof.nodes[ROWS].equals(reference.nodes[ROWS])


def test_tensors_made_outside_inference_mode_are_one_group_under_it():
    # the capture's copies are inference tensors where the caller's are, so Dynamo's guards
    # (which check dispatch keys) take the caller's own calls
    model, x = Branches().eval(), torch.randn(4, 8)
    with torch.inference_mode():
        with pyfxprof.Profiler(model) as p:
            outputs = [model(x) for _ in range(3)]
        expected = model(x)
    assert len(p._groups) == 1 and all(torch.equal(out, expected) for out in outputs)
    (prof,) = p.profiles
    assert prof.meta["graphs"] == 2 and prof.n_runs == 2  # (the capture call: not timed)


def test_a_graph_broken_group_says_why_its_backward_is_not_timed():
    model = Branches().eval()
    with pyfxprof.Profiler(model, backward=True) as p:
        with torch.no_grad():
            for _ in range(2):
                model(torch.randn(4, 8))
    (prof,) = p.profiles
    assert prof.meta["capture_mode"] == "dynamo" and prof.backward_samples is None
    note = prof.meta["backward_note"]
    assert note.startswith("no backward columns") and "ran as 2 Dynamo graphs" in note
    assert "module hooks" not in note
