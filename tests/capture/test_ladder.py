"""Tests of the capture fallback ladder: leafing the failing submodule, module hooks, whole model,
forced modes, and the messages that say what was done (behaviour, never speed)."""

import numpy as np
import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.data.validate import model_nodes
from pyfxprof import _C
from pyfxprof.capture.tracing import MAX_LEAF_ATTEMPTS, CaptureFallbackWarning, capture, hook_leaves
from pyfxprof.errors import PyfxprofError
from pyfxprof.timing.hook_timing import HookAnalysis, hook_timings
from pyfxprof.timing.recorder import Records
from tests.models import DataDependent, Net, net_input


def refuse_dynamo():
    """Fail under TorchDynamo, as code Dynamo cannot run does (a model split at graph breaks
    is profiled on the dynamo rung: the rungs below it need models Dynamo fails on)."""
    if torch.compiler.is_compiling():
        raise RuntimeError("this model fails under TorchDynamo")


class Gate(nn.Module):
    """Branches on a tensor value: torch.fx cannot trace it; fails under TorchDynamo."""

    def forward(self, x):
        refuse_dynamo()
        return x * 2 if x.mean() > 0 else x


class Body(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.gate = Gate()

    def forward(self, x):
        return self.gate(self.conv(x)) + x


class PartlyTraceable(nn.Module):
    """Only body.gate breaks tracing; everything else traces."""

    def __init__(self):
        super().__init__()
        self.body = Body()
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.body(x)).sum(dim=1)


class Untraceable(nn.Module):
    """Branches on a tensor value in its own forward; calls relu twice; fails under
    TorchDynamo."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.relu = nn.ReLU()
        self.drop = nn.Dropout()

    def forward(self, x):
        refuse_dynamo()
        x = self.relu(self.bn(self.conv(x)))
        if x.sum() > 0:
            x = x + 1
        return self.drop(self.relu(x))


class TracedWrong(nn.Module):
    """Traces without error, but the traced graph fails on inputs the model accepts."""

    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()

    def forward(self, x):
        if torch.fx._symbolic_trace.is_fx_tracing():
            x = x.view(-1, 7)
        return self.relu(x)


def run(model, **kwargs):
    return pyfxprof.profile(model, (net_input(),), runs=3, warmup=1, progress=False, **kwargs)


def hook_counts(model):
    return [(len(m._forward_pre_hooks), len(m._forward_hooks)) for m in model.modules()]


def test_data_dependent_model_runs_as_dynamo_graphs_and_says_why():
    prof = run(DataDependent())
    notes = prof.meta["capture_notes"]
    assert notes[0].startswith("fx: torch.fx cannot trace DataDependent") and "TraceError" in notes[0]
    assert notes[1] == "dynamo: 2 graphs at function level (graph breaks: Data-dependent branching)"
    assert prof.meta["capture_mode"] == "dynamo" and prof.meta["graphs"] == 2
    assert list(prof.nodes["op"])[-1] == "between_graphs"
    assert 0 < prof.meta["coverage"]
    header = prof.table().split("\n\n")[0]
    assert "capture dynamo" in header
    assert "capture: fx: torch.fx cannot trace DataDependent" in header


def test_failing_submodule_is_leafed_and_the_rest_still_timed_per_node():
    with pytest.warns(CaptureFallbackWarning, match=r"body\.gate \(Gate\).*made body\.gate a leaf"):
        prof = run(PartlyTraceable())
    assert prof.meta["capture_mode"] == "fx+leaf"
    assert prof.meta["mode"] == "codegen"
    nodes = prof.nodes[model_nodes(prof.nodes)].set_index("name")  # the outside row apart
    assert list(nodes.index) == ["body_conv", "body_gate", "add", "relu", "sum_1"]
    assert nodes.loc["body_gate", "op"] == "call_module"
    assert nodes.loc["body_gate", "module_type"] == "Gate"
    assert nodes.loc["add", "module_path"] == "body"
    notes = prof.meta["capture_notes"]
    assert [note.split(":")[0] for note in notes] == ["fx", "dynamo", "torch.fx cannot trace body.gate (Gate)"]


class ManyGates(nn.Module):
    def __init__(self, types):
        super().__init__()
        self.gates = nn.ModuleList(kind() for kind in types)

    def forward(self, x):
        for gate in self.gates:
            x = gate(x)
        return x


def test_a_type_failing_twice_is_made_a_leaf_as_a_type():
    with pytest.warns(CaptureFallbackWarning):
        prof = run(ManyGates([Gate] * (MAX_LEAF_ATTEMPTS + 2)))  # dynamo: graph breaks
    notes = prof.meta["capture_notes"]
    assert prof.meta["capture_mode"] == "fx+leaf"
    assert model_nodes(prof.nodes).sum() == MAX_LEAF_ATTEMPTS + 2
    assert notes[-2].endswith("made gates.0 a leaf") and notes[-1].endswith("made every Gate a leaf")


def test_leafing_is_bounded():
    kinds = [type(f"Gate{k}", (Gate,), {}) for k in range(MAX_LEAF_ATTEMPTS + 2)]
    with pytest.raises(PyfxprofError) as error:
        capture(ManyGates(kinds), mode="fx+leaf")
    assert str(error.value).count("a leaf;") == MAX_LEAF_ATTEMPTS
    with pytest.warns(CaptureFallbackWarning):
        assert run(ManyGates(kinds)).meta["capture_mode"] == "hooks"


def test_hooks_nodes_are_leaf_module_calls_and_hooks_are_removed():
    model = Untraceable().train()
    model.conv.train(False)
    flags = [m.training for m in model.modules()]
    state = {k: v.clone() for k, v in model.state_dict().items()}
    hooks = hook_counts(model)
    with pytest.warns(CaptureFallbackWarning, match="Untraceable .*capture mode 'hooks'"):
        prof = run(model)
    assert prof.meta["capture_mode"] == "hooks" and prof.meta["mode"] == "hooks"
    assert list(prof.nodes["name"]) == ["conv", "bn", "relu", "relu_1", "drop"]
    assert set(prof.nodes["op"]) == {"call_module"}
    assert list(prof.nodes["module_type"]) == ["Conv2d", "BatchNorm2d", "ReLU", "ReLU", "Dropout"]
    assert prof.nodes.loc[0, "input_shapes"] == "([2, 3, 8, 8] float32)"
    assert prof.samples.shape == (3, 5) and 0 < prof.meta["coverage"]
    assert hook_counts(model) == hooks
    assert [m.training for m in model.modules()] == flags
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, state[key])


def test_graph_failing_where_the_model_runs_goes_one_rung_down():
    prof = run(TracedWrong())
    assert prof.meta["capture_mode"] == "dynamo" and model_nodes(prof.nodes).sum() == 1
    assert prof.meta["capture_notes"][0].startswith("fx: the graph fails where the model runs")
    assert prof.nodes.loc[0, "module_path"] == "relu"


def test_forced_modes():
    assert run(Net(), capture="fx").meta["capture_mode"] == "fx"
    hooks = run(Net(), capture="hooks")
    assert hooks.meta["capture_mode"] == "hooks"
    assert list(hooks.nodes["module_path"]) == [p for p, _ in hook_leaves(Net())]
    whole = run(Net(), capture="whole")
    assert whole.meta["capture_mode"] == "whole" and whole.n_nodes == 1
    assert whole.nodes.loc[0, "name"] == "Net" and whole.nodes.loc[0, "module_path"] == ""
    assert whole.meta["flops"] == hooks.meta["flops"] == run(Net()).meta["flops"]


def test_forced_fx_on_an_untraceable_model_is_a_one_line_error():
    with pytest.raises(PyfxprofError, match="torch.fx cannot trace DataDependent .*capture='auto'"):
        run(DataDependent(), capture="fx")


def test_unknown_capture_mode_is_refused():
    with pytest.raises(PyfxprofError, match="capture must be one of auto, fx, dynamo, hooks, whole"):
        run(Net(), capture="magic")


def test_wrong_inputs_on_an_untraceable_model_name_the_model():
    with pytest.raises(PyfxprofError, match=r"Untraceable failed on inputs \(\[2, 5, 8, 8\]"):
        pyfxprof.profile(Untraceable(), (torch.zeros(2, 5, 8, 8),), runs=1, progress=False)


def test_hook_leaves_descend_containers_but_not_leaves():
    model = nn.Sequential(nn.ModuleList([nn.Linear(2, 2)]), nn.TransformerEncoderLayer(4, 2),
                          Gate())
    assert [path for path, _ in hook_leaves(model)] == ["0.0", "1", "2"]
    assert [path for path, _ in hook_leaves(PartlyTraceable())] == ["body.conv", "body.gate",
                                                                     "relu"]
    assert [path for path, _ in hook_leaves(PartlyTraceable(), ["body"])] == ["body", "relu"]


def test_hook_timings_keep_only_runs_with_the_analysed_call_sequence():
    begin, end = _C.KIND_RUN_BEGIN, _C.KIND_RUN_END
    # Run 1: a (ids 1, 2) then b (3, 4). Run 2 calls a twice: not the analysed sequence.
    stamps = [0, 1, 5, 6, 9, 10, 20, 21, 22, 23, 24, 30]
    ids = [9, 1, 2, 3, 4, 9, 9, 1, 2, 1, 2, 9]
    kinds = [begin, 0, 0, 0, 0, end, begin, 0, 0, 0, 0, end]
    records = Records(np.array(stamps), np.array(ids, np.uint32), np.ones(12, np.uint32),
                      np.array(kinds, np.uint16))
    analysis = HookAnalysis([0, 1], np.array([0, 1, 2, 3]), np.array([0, 2]), np.array([1, 3]),
                            [{}, {}], 0)
    timings = hook_timings(records, 1, 9, analysis)
    assert timings.intervals.tolist() == [[4, 3]] and timings.run_totals.tolist() == [10]
    assert timings.incomplete_runs == 1


def test_hooks_flops_total_is_the_sum_of_the_rows_and_the_rest_is_noted():
    class Functional(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(8, 8)

        def forward(self, x):
            return self.linear(x) @ torch.ones(8, 8)  # a matmul outside every hooked module

    prof = pyfxprof.profile(Functional(), (torch.zeros(4, 8),), runs=2, warmup=0,
                            progress=False, capture="hooks")
    assert prof.meta["flops"] == int(prof.nodes["flops"].sum()) == 2 * 4 * 8 * 8
    assert prof.meta["capture_notes"] == [
        "512 FLOPs ran outside the hooked modules (on no row, not in the total)"]


def test_docs_ladder_and_capture_table_are_the_rungs():
    """docs/capture.md's ladder line and its table of capture= values read RUNGS and
    CAPTURE_MODES; the ladder has one function per rung."""
    from pyfxprof.capture import ladder
    from pyfxprof.data.rungs import CAPTURE_MODES, RUNGS
    from tests.docs_tables import DOCS, table_after
    text = (DOCS / "capture.md").read_text(encoding="utf-8")
    assert "    " + "  →  ".join(RUNGS) + "\n" in text
    rows = table_after("capture.md", "## Forced modes")
    assert [row[0].split()[0].strip('`"') for row in rows[1:]] == list(CAPTURE_MODES)
    assert [name for name, _ in ladder._rungs("auto", "function", None)] == list(RUNGS)
