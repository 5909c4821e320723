"""Models Dynamo splits into several graphs (graph breaks): profiled on the dynamo rung graph by
graph, run by Dynamo's own code, with the time between graphs a row of its own; the same row for
torch.compile'd models with graph breaks."""

import time

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.capture.dynamo_frame import graphs_capture
from pyfxprof.capture.ladder import _graphs_analysis
from pyfxprof.capture.inputs import BoundInputs
from pyfxprof.capture.node_table import BETWEEN_GRAPHS
from pyfxprof.capture.tracing import CaptureFallbackWarning
from pyfxprof.errors import PyfxprofError
from pyfxprof.run.capture_cache import CAPTURES
from pyfxprof.timing.graph_spans import GraphsExecutor
from tests.models import GraphBreak

RUNS = dict(runs=5, warmup=1, progress=False)


class ItemBreak(torch.nn.Module):
    """A `.item()` (a graph break) between two blocks, in a submodule's forward."""

    def __init__(self):
        super().__init__()
        self.first, self.second = GraphBreak(), torch.nn.Linear(8, 4)

    def forward(self, x):
        scale = self.first(x).mean().item()
        return self.second(x * scale)


def test_a_graph_break_gives_each_graph_and_the_between_row():
    prof = pyfxprof.profile(GraphBreak().eval(), (torch.randn(4, 8),), capture="dynamo", **RUNS)
    meta, nodes = prof.meta, prof.nodes
    assert meta["capture_mode"] == "dynamo" and meta["mode"] == "codegen"
    assert meta["graphs"] == 2 and len(meta["graph_breaks"]) >= 1
    assert meta["capture_notes"][-1].startswith("dynamo: 2 graphs at function level (graph breaks: ")
    ops = nodes[nodes["op"] != "between_graphs"]
    assert list(ops["module_path"]) == ["a", "", "b", ""]
    assert list(ops["graph"]) == [0, 0, 1, 1]
    assert all(source.endswith("in forward") for source in ops["source"])
    assert nodes["name"].is_unique and list(nodes["name"])[-1] == BETWEEN_GRAPHS
    between = prof.samples[:, -1]
    assert (between > 0).all() and (prof.samples.sum(axis=1) <= prof.run_totals).all()
    assert 0 < meta["coverage"] < 1
    header = prof.table().split("\n\n")[0]
    assert "capture dynamo" in header and "2 graphs and the Python between them" in header
    assert "graph breaks: " in header


def test_outputs_are_the_eager_models(tmp_path):
    model = ItemBreak().eval()
    with torch.inference_mode():  # as profile() runs it
        x = torch.randn(4, 8)
        frame = graphs_capture(model, BoundInputs((x,)), "function")
        executor = GraphsExecutor(frame, {})
        with executor:
            found = [executor.run((x,)) for _ in range(3)]
        expected = model(x)
    assert len(frame.graphs) >= 2 and all(torch.equal(out, expected) for out in found)
    assert executor.timings().between_graphs.shape == (3,)


def test_saved_profiles_keep_the_graphs(tmp_path):
    prof = pyfxprof.profile(ItemBreak().eval(), (torch.randn(4, 8),), capture="dynamo", **RUNS)
    prof.save(tmp_path / "p.json")
    loaded = pyfxprof.load(tmp_path / "p.json")
    assert loaded.meta["graphs"] == prof.meta["graphs"] >= 2
    assert loaded.meta["graph_breaks"] == prof.meta["graph_breaks"]
    assert list(loaded.nodes["name"]) == list(prof.nodes["name"])
    assert list(loaded.nodes["graph"]) == list(prof.nodes["graph"])
    assert np.array_equal(loaded.samples, prof.samples)
    assert loaded.meta["coverage"] == pytest.approx(prof.meta["coverage"])  # nodes only
    assert loaded.table().split("\n\n")[0] == prof.table().split("\n\n")[0]


class BreaksInALoop(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        for _ in range(3):
            x = self.lin(x)
            torch._dynamo.graph_break()
        return x


def test_a_break_inside_the_models_own_loop_is_refused_in_one_line():
    with pytest.raises(PyfxprofError) as info:
        pyfxprof.profile(BreaksInALoop().eval(), (torch.ones(2, 4),), capture="dynamo", **RUNS)
    assert "\n" not in str(info.value)


class Step(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        x = self.lin(x)
        torch._dynamo.graph_break()
        return x.relu()


class StepsInALoop(torch.nn.Module):
    """A submodule with a graph break called in a loop: its graphs run once per iteration."""

    def __init__(self):
        super().__init__()
        self.pre, self.step = torch.nn.Linear(4, 4), Step()

    def forward(self, x):
        x = self.pre(x)
        for _ in range(3):
            x = self.step(x)
        return x


def test_the_graphs_of_a_block_called_in_a_loop_are_timed_at_each_call_and_summed():
    prof = pyfxprof.profile(StepsInALoop().eval(), (torch.randn(2, 4),), capture="dynamo",
                            **RUNS)
    frame = prof.to_dataframe()
    nodes = frame[frame["graph"] >= 0]
    assert prof.meta["capture_mode"] == "dynamo" and prof.n_runs == 5
    # Dynamo runs forward's own frame (its loop holds a break) eagerly: `pre` is in no graph,
    # Step's two graphs (lin; relu) run once per iteration
    calls = dict(zip(nodes["target"].astype(str), nodes["calls"]))
    assert calls == {"torch._C._nn.linear": 3, "relu": 3}
    assert (prof.samples[:, :len(nodes)] > 0).all()
    assert "Calls" in prof.table(width=None)


class StepsTimes(StepsInALoop):
    def forward(self, x, times):
        for _ in range(times):
            x = self.step(x)
        return x


def test_a_call_that_runs_the_loop_another_number_of_times_is_refused_in_one_line():
    model, x = StepsTimes().eval(), torch.randn(2, 4)
    with torch.inference_mode():
        frame = graphs_capture(model, BoundInputs((x, 3)), "function")
        _graphs_analysis(frame, BoundInputs((x, 3)))  # keeps the order a call runs
        executor = GraphsExecutor(frame, {})
        with executor:
            assert torch.equal(executor.run((x, 3)), model(x, 3))
            with pytest.raises(PyfxprofError) as info:
                executor.run((x, 2))
    assert len(frame.order) == 6 and max(frame.order.count(g) for g in frame.order) == 3
    assert "\n" not in str(info.value) and f"instead of {frame.order}" in str(info.value)


class SignBlock(torch.nn.Module):
    """A Linear, then a branch on the sign of its output's sum (``.item()``: a graph break)."""

    def __init__(self, width: int):
        super().__init__()
        self.lin = torch.nn.Linear(width, width)

    def forward(self, x):
        x = self.lin(x)
        if x.sum().item() > 0:
            return x.relu()
        return -x


class SignBlocks(torch.nn.Module):
    """Four SignBlocks in a loop: Dynamo gives 6 graphs, one of them run 3 times per call."""

    def __init__(self, width: int = 512):
        super().__init__()
        self.blocks = torch.nn.ModuleList(SignBlock(width) for _ in range(4))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


@pytest.mark.timing(attempts=3)  # coverage is a timing figure
def test_a_loop_of_blocks_with_a_data_dependent_branch_is_profiled_on_dynamo():
    torch.manual_seed(0)
    model, x = SignBlocks().eval(), torch.rand(64, 512)
    with torch.no_grad():  # positive weights on positive inputs: every block takes relu
        for block in model.blocks:
            block.lin.weight.abs_()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two threads on a loaded 2-core machine thrash
    try:
        prof = pyfxprof.profile(model, (x,), runs=15, warmup=3, progress=False)
        call_ns = _fastest_call(model, x, 15)
    finally:
        torch.set_num_threads(threads)
    frame = prof.to_dataframe()
    nodes = frame[frame["graph"] >= 0]
    assert prof.meta["capture_mode"] == "dynamo" and prof.meta["graphs"] >= 2
    # Dynamo runs one graph for several blocks: each block's runs are rows of their own,
    # named by the block's path (issue 46)
    assert (nodes["calls"] == 1).all()
    linear = nodes[nodes["target"].astype(str).str.endswith("linear")]
    assert list(linear["module_path"]) == [f"blocks.{k}.lin" for k in range(4)]
    relu = nodes[nodes["target"].astype(str) == "relu"]
    assert list(relu["module_path"]) == [f"blocks.{k}" for k in range(4)]
    assert (relu["median"] > 0).all()
    # issue 34: profiled at >= 90% of the call: the op rows (Linear, sum, relu) of a run,
    # summed, against the user's own eager call (both the fastest of 15, so that a loaded
    # machine's preemptions are left out of both); the user's Python between the ops is a few
    # % of the call. The rest of the graphs' run, the (between graphs) row, is mostly
    # Dynamo's machinery at each break (the guard checks of the block's frame and of its
    # resume function, the resume call), which the eager call does not run
    # (docs/capture.md, "Graph breaks")
    ops = prof.samples[:, (prof.nodes["graph"] >= 0).to_numpy()].sum(axis=1).min()
    assert ops >= 0.9 * call_ns, (ops, call_ns)
    rows = prof.samples.sum(axis=1)  # the nodes and the Python between graphs
    assert np.median(rows / prof.run_totals) == pytest.approx(1.0, abs=0.05)


def _fastest_call(model, x, calls: int) -> int:
    """The fastest of `calls` eager calls of model(x) (ns), in profile()'s autograd mode."""
    found = []
    with torch.inference_mode():
        for _ in range(calls + 3):  # (3 warm-up calls)
            start = time.perf_counter_ns()
            model(x)
            found.append(time.perf_counter_ns() - start)
    return min(found[3:])


class Branches(torch.nn.Module):
    """A data-dependent branch between two layers: torch.fx cannot trace it, Dynamo splits it."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        x = self.a(x)
        if x.sum() > 0:
            x = x * 2
        return self.b(x)


def test_train_mode_graphs_go_down_the_ladder():
    with pytest.warns(CaptureFallbackWarning, match="graph breaks .*timed in eval mode only"), \
            pytest.raises(PyfxprofError, match="backward=True needs a graph capture"):
        pyfxprof.profile(Branches(), (torch.randn(4, 8),), backward=True, **RUNS)


def test_compiled_graph_breaks_profile_each_graph_with_the_between_row(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    prof = pyfxprof.profile(GraphBreak().eval(), (torch.randn(4, 8),), compile=True, **RUNS)
    nodes = prof.nodes.set_index("name")
    assert nodes.loc[BETWEEN_GRAPHS, "op"] == "between_graphs"
    assert {"a", "b"} <= {m for ms in prof.nodes["source_modules"] for m in ms}
    column = list(prof.nodes["name"]).index(BETWEEN_GRAPHS)
    assert (prof.samples[:, column] > 0).all()
    assert (prof.samples.sum(axis=1) <= prof.run_totals).all()
    kernels = prof.nodes[~prof.nodes["op"].isin(("outside_kernels", "between_graphs"))]
    assert set(kernels["graph"]) == {0, 1}  # each graph's kernels, profiled
    assert "2 compiled graph(s)" in " ".join(prof.meta["capture_notes"])


@pytest.mark.timing(attempts=3)
def test_segformer_profiles_on_dynamo_with_attention_rows():
    transformers = pytest.importorskip("transformers")
    config = transformers.SegformerConfig(
        num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
        num_attention_heads=[1, 2], decoder_hidden_size=16, num_labels=3, patch_sizes=[7, 3],
        strides=[4, 2], mlp_ratios=[2, 2])
    torch.manual_seed(0)
    model = transformers.SegformerForSemanticSegmentation(config).eval()
    prof = pyfxprof.profile(model, (torch.randn(1, 3, 128, 128),), runs=10, warmup=2,
                            progress=False)
    assert prof.meta["capture_mode"] == "dynamo" and prof.meta["graphs"] >= 2
    attention = prof.nodes[prof.nodes["module_path"].str.endswith(".attention")]
    assert "torch._C._nn.scaled_dot_product_attention" in set(attention["target"])
    graph_coverage = prof.meta.get("graph_coverage", prof.meta["coverage"])  # of the graphs
    assert graph_coverage >= 0.9, graph_coverage


class Halves(torch.nn.Module):
    def forward(self, x):
        x = x + 1
        torch._dynamo.graph_break()
        return x * 2


def test_captures_never_reach_dynamos_recompile_limit():
    limit = torch._dynamo.config.recompile_limit
    model = Halves().eval()
    for _ in range(limit + 1):  # each capture compiles the model's frames in a region of its own
        CAPTURES.clear()  # (else the next profile() reuses the capture)
        prof = pyfxprof.profile(model, (torch.ones(3),), capture="dynamo", runs=1, warmup=0,
                                progress=False)
        assert prof.meta["graphs"] == 2
