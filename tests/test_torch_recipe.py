"""The torch.profiler recipe's steps done with pyfxprof beside torch.profiler (ResNet-18, a small
input): same calls, results of the same shape, and the same figures where both measure them."""

import json

import pytest
import torch
import torchvision
from torch.profiler import ProfilerActivity, record_function

import pyfxprof

RUNS = 3


@pytest.fixture(scope="module")
def model_and_inputs():
    return torchvision.models.resnet18().eval(), torch.randn(1, 3, 64, 64)


@pytest.fixture(scope="module")
def prof(model_and_inputs):
    model, inputs = model_and_inputs
    return pyfxprof.profile(model, (inputs,), runs=RUNS, warmup=1, progress=False)


def torch_profile(model, inputs, steps=1, **options):
    """The recipe's step 3: the model run under torch.profiler (record_shapes and the rest)."""
    model(inputs)  # warm, as pyfxprof's warm-up run
    with torch.profiler.profile(activities=[ProfilerActivity.CPU], **options) as torch_prof:
        with record_function("model_inference"):
            for _ in range(steps):
                model(inputs)
    return torch_prof


def conv_share(rows, conv_key, exclude=()):
    """The convolutions' share of the summed self CPU time of the rows."""
    rows = [row for row in rows if row.key not in exclude]
    total = sum(row.self_cpu_time_total for row in rows)
    return sum(row.cpu_time_total for row in rows if row.key == conv_key) / total


@pytest.mark.timing(attempts=3)
def test_step3_execution_time_table_and_conv_share_agree(model_and_inputs, prof):
    model, inputs = model_and_inputs
    with torch.inference_mode():
        first, second = (torch_profile(model, inputs, record_shapes=True).key_averages()
                         for _ in range(2))
    text = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    body = text.splitlines()[3:-2]
    assert body[0].split()[0] == "Conv2d" and len(body) == len(prof.key_averages()) <= 10
    ours = {row.key: row for row in prof.key_averages()}
    theirs = {row.key: row for row in first}
    assert ours["Conv2d"].count / RUNS == theirs["aten::conv2d"].count == 20
    assert ours["BatchNorm2d"].count / RUNS == theirs["aten::batch_norm"].count == 20
    wrapper = ("model_inference",)
    torch_share = conv_share(first, "aten::conv2d", wrapper)
    spread = abs(torch_share - conv_share(second, "aten::conv2d", wrapper))
    our_share = conv_share(ours.values(), "Conv2d")
    assert abs(our_share - torch_share) <= max(0.10, 3 * spread), (our_share, torch_share, spread)


def test_step3_group_by_input_shape_splits_as_torch(model_and_inputs, prof):
    model, inputs = model_and_inputs
    with torch.inference_mode():
        torch_rows = torch_profile(model, inputs, record_shapes=True).key_averages(
            group_by_input_shape=True)
    theirs = {str(row.input_shapes[0]) for row in torch_rows if row.key == "aten::conv2d"}
    grouped = prof.key_averages(group_by_input_shape=True)
    ours = [row for row in grouped if row.key == "Conv2d"]
    assert sum(row.count for row in ours) == 20 * RUNS
    assert {row.input_shapes.split("]")[0].strip("([") for row in ours} == \
        {shape.strip("[]") for shape in theirs}
    assert "Input Shapes" in grouped.table(sort_by="cpu_time_total", row_limit=10).splitlines()[1]


def test_step5_chrome_trace_has_steps_and_a_slice_per_node(prof, tmp_path):
    prof.export_chrome_trace(tmp_path / "trace.json")
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    steps = sorted(e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")
                   and e.get("cat") == "user_annotation")  # not the step closing the trace
    assert steps == [f"ProfilerStep#{k}" for k in range(RUNS)]
    conv_names = set(prof.nodes["name"][prof.nodes["module_type"] == "Conv2d"])
    convs = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "Conv2d"]
    assert len(convs) == 20 * RUNS and {e["args"]["node"] for e in convs} == conv_names


def test_step6_stack_grouping_and_export_stacks(prof, tmp_path):
    text = prof.key_averages(group_by_stack_n=5).table(sort_by="self_cuda_time_total",
                                                       row_limit=2)
    lines = text.splitlines()
    assert "Source Location" in lines[1]
    assert sum(1 for line in lines[3:-2] if not line.startswith(" ")) == 2
    prof.export_stacks(tmp_path / "profiler_stacks.txt", "self_cuda_time_total")
    cuda = (tmp_path / "profiler_stacks.txt").read_text().splitlines()
    assert len(cuda) == prof.n_nodes and {line.rsplit(" ", 1)[1] for line in cuda} == {"0"}
    prof.export_stacks(tmp_path / "cpu_stacks.txt", "self_cpu_time_total", by="source")
    cpu = (tmp_path / "cpu_stacks.txt").read_text().splitlines()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in cpu) == int(prof.samples.sum())


def trace_handler_factory(out_dir, seen):
    """The recipe's trace_handler, writing where the test says and noting what it saw."""
    def trace_handler(p):
        output = p.key_averages().table(sort_by="self_cuda_time_total", row_limit=-1)
        path = out_dir / f"test_trace_{p.step_num}.json"
        p.export_chrome_trace(str(path))
        steps = sorted(e["name"] for e in json.loads(path.read_text())["traceEvents"]
                       if str(e.get("name", "")).startswith("ProfilerStep#")
                       and e.get("cat") != "trace_end")  # pyfxprof's step closing the trace
        seen.append((p.step_num, sorted(set(steps)), output.splitlines()[1].split()[0]))
    return trace_handler


def test_step7_the_recipes_trace_handler_runs_unchanged_and_numbers_steps_as_torch(tmp_path):
    model, inputs = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()), torch.randn(4, 8)
    seen = {"torch": [], "pyfxprof": []}
    with torch.profiler.profile(
            activities=[ProfilerActivity.CPU],
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2),
            on_trace_ready=trace_handler_factory(tmp_path, seen["torch"])) as p:
        for _ in range(10):
            model(inputs)
            p.step()
    with pyfxprof.Profiler(
            model, schedule=pyfxprof.schedule(wait=1, warmup=1, active=2, repeat=2),
            on_trace_ready=trace_handler_factory(tmp_path, seen["pyfxprof"])) as p:
        for _ in range(10):
            model(inputs)
            p.step()
    assert seen["pyfxprof"] == seen["torch"]
    assert {event.step for event in p.profiles[-1].events()} == {6, 7}
    assert [step_num for step_num, _, _ in seen["torch"]] == [4, 8]
    assert seen["torch"][1][1] == ["ProfilerStep#6", "ProfilerStep#7"]
