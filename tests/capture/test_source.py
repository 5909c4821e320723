"""Source lines per node: the model-code line that created each node (FX, Dynamo, module hooks,
whole model), torch's and transformers' frames on request, grouped, in key_averages, folded
stacks and flame graphs."""

import pytest
import torch
import torchvision

import pyfxprof
from pyfxprof.data.validate import model_nodes
from pyfxprof.capture import ladder
from pyfxprof.capture.source import is_machinery, source_frames
from pyfxprof.cli import default_model
from tests.hf_models import gpt2

TRACE = ('File "/env/site-packages/torchvision/models/resnet.py", line 285, in forward\n'
         '    return self._forward_impl(x)\n'
         f'  File "{torch.__file__}", line 10, in call_module\n    x\n'
         '  File "/env/site-packages/transformers/modeling_utils.py", line 5, in wrapper\n    y\n'
         '  File "/env/site-packages/transformers/models/gpt2/modeling_gpt2.py", line 7, in forward\n')


def test_source_frames_keep_model_code_and_leave_internals_out():
    assert source_frames(TRACE) == ("resnet.py:285 in forward", "modeling_gpt2.py:7 in forward")
    assert source_frames(TRACE, library=True) == (
        "resnet.py:285 in forward", "__init__.py:10 in call_module",
        "modeling_utils.py:5 in wrapper", "modeling_gpt2.py:7 in forward")
    assert source_frames(None) == ()
    assert is_machinery("<eval_with_key>.3") and not is_machinery("/home/me/net.py")
    # pyfxprof's capture code is machinery, the CLI's bundled model is model code
    assert is_machinery(ladder.__file__) and not is_machinery(default_model.__file__)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def forward(self, x):
        return self.body(x) + 1


def test_library_frames_keeps_torchs_frames_and_never_the_capture_machinery():
    x = torch.randn(2, 4)
    plain = pyfxprof.profile(Net(), (x,), runs=1, warmup=0, progress=False)
    kept = pyfxprof.profile(Net(), (x,), runs=1, warmup=0, progress=False, library_frames=True)
    assert plain.nodes["source"].str.startswith("test_source.py:").all()
    stack = kept.nodes.set_index("name").loc["body_0", "source_stack"]
    assert stack[0] == plain.nodes["source_stack"][0][0]  # the model's line, then torch's
    assert stack[-1].startswith("container.py:") and "module.py:" in " ".join(stack)
    assert not any(frame.startswith(("tracing.py:", "proxy.py:")) for frame in stack)


@pytest.fixture(scope="module")
def resnet():
    return pyfxprof.profile(torchvision.models.resnet18().eval(), (torch.randn(1, 3, 32, 32),),
                            runs=2, warmup=0, progress=False)


def test_resnet18_nodes_name_their_torchvision_lines(resnet):
    nodes = resnet.nodes.set_index("name")
    assert resnet.meta["capture_mode"] == "fx"
    assert nodes.loc["conv1", "source"].startswith("resnet.py:") and \
        nodes.loc["conv1", "source"].endswith("in _forward_impl")
    assert nodes.loc["layer1_0_conv1", "source_stack"][-1].endswith("in forward")
    nodes_of_model = resnet.nodes[model_nodes(resnet.nodes)]  # not the outside row
    assert all(s.startswith("resnet.py:") for s in nodes_of_model["source"])
    # every residual add of a BasicBlock comes from one line
    adds = nodes[nodes["target"] == "_operator.iadd"]["source"]  # out += identity, in place
    assert len(adds) == 8 and adds.nunique() == 1


def test_group_by_source_stacks_and_flame_graph(resnet, tmp_path):
    lines = resnet.table(group_by="source", width=None, sort_by="order").splitlines()
    header = next(k for k, line in enumerate(lines) if line.startswith("Source"))
    assert lines[header + 2].split()[0] == resnet.nodes["source"][0].split()[0]
    averages = resnet.key_averages(group_by_stack_n=2)
    assert all(1 <= len(row.stack) <= 2 for row in averages
               if not row.key.startswith("Python outside the graph"))
    assert "Source Location" in averages.table().splitlines()[1]
    resnet.export_stacks(tmp_path / "stacks.txt", metric="self_cpu_time_total", by="source")
    folded = (tmp_path / "stacks.txt").read_text().splitlines()
    assert len(folded) == resnet.n_nodes
    frames, weight = folded[0].rsplit(" ", 1)
    assert frames.split(";")[:2] == ["root", resnet.nodes["source_stack"][0][0]]
    assert int(weight) == int(resnet.samples[:, 0].sum())  # total over runs, in ns
    resnet.export_flamegraph(tmp_path / "flame.svg", by="source")
    assert "resnet.py:" in (tmp_path / "flame.svg").read_text()


def test_tiny_gpt2_dynamo_nodes_name_modeling_gpt2_lines():
    model, inputs = gpt2()
    prof = pyfxprof.profile(model.eval(), inputs, runs=1, warmup=0, progress=False)
    assert prof.meta["capture_mode"] == "dynamo"
    sources = prof.nodes["source"]
    assert (sources != "").mean() > 0.9
    named = sources[sources != ""]
    assert named.str.startswith("modeling_gpt2.py:").all()  # no transformers/torch internals


def test_hooks_and_whole_captures_name_the_same_lines_as_fx(resnet):
    x = torch.randn(1, 3, 32, 32)
    model = torchvision.models.resnet18().eval()
    hooks = pyfxprof.profile(model, (x,), runs=1, warmup=0, progress=False, capture="hooks")
    modules = resnet.nodes[resnet.nodes["op"] == "call_module"].set_index("name")
    hooked = hooks.nodes[model_nodes(hooks.nodes)].set_index("name")
    assert hooked["source"].to_dict() == modules["source"].to_dict()
    whole = pyfxprof.profile(model, (x,), runs=1, warmup=0, progress=False, capture="whole")
    assert whole.nodes.loc[model_nodes(whole.nodes), "source"].tolist() == [
        "resnet.py:284 in forward"]  # its forward
    assert not any(note.startswith("no source lines") for note in whole.meta["capture_notes"])


def test_a_capture_without_model_code_says_so_in_the_header():
    prof = pyfxprof.profile(torch.nn.Linear(4, 4), (torch.randn(2, 4),), runs=1, warmup=0,
                            progress=False, capture="whole")
    assert prof.nodes["source"].tolist() == [""]
    assert "capture: no source lines: no node was made by model code" in prof.table()
    kept = pyfxprof.profile(torch.nn.Linear(4, 4), (torch.randn(2, 4),), runs=1, warmup=0,
                            progress=False, capture="whole", library_frames=True)
    assert kept.nodes["source"].tolist()[0].startswith("linear.py:")


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.nn.functional.gelu(self.fc(x)) + x.relu()


class _Nested(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = _Block()

    def forward(self, x):
        return self.block(x).softmax(-1)


@pytest.mark.parametrize("library", [False, True])
def test_the_profiling_tracer_records_the_sources_torch_fx_records(library):
    """ProfilingTracer takes stack traces with Python's traceback module (torch's native
    capture loads Inductor and Dynamo): the same source lines as torch.fx's own
    record_stack_traces, torch's frames included or not."""
    from torch import fx

    from pyfxprof.capture.tracing import ProfilingTracer

    def sources(tracer):
        graph = tracer.trace(_Nested())
        return [(node.name, source_frames(node.meta.get("stack_trace"), library))
                for node in graph.nodes]

    reference = fx.Tracer()
    reference.record_stack_traces = True
    ours = sources(ProfilingTracer())
    assert ours == sources(reference)
    assert any("test_source.py" in frame for _, frames in ours for frame in frames)
