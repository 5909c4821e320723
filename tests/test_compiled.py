"""Profiling torch.compile'd models per Inductor kernel (pyfxprof/run/compiled_profile.py and the capture,
timing and analyses files it uses): kernel rows with provenance, outputs of the timed wrapper,
the eager-vs-compiled diff and the refusals. Compiles on CPU (needs a C++
compiler); Inductor's cache lives in a temporary directory per module. What timing each kernel
costs is measured by benchmarks/bench_compiled.py (speed goals are not timed tests)."""

import json
import time

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.analyses.compiled_diff import CompiledDiff, kernel_frame, provenance_coverage
from pyfxprof.capture.inductor import InductorCapture, compile_settings
from pyfxprof.capture.inputs import BoundInputs
from pyfxprof.errors import PyfxprofError
from pyfxprof.timing.compiled_executor import CompiledExecutor, plan_graph
from tests.models import GraphBreak, Net, net_input

RUNS = dict(runs=5, warmup=2, progress=False)


#: Inductor's on-disk caches in this module's own temporary directory, one thread.
pytestmark = pytest.mark.usefixtures("inductor_cache")


@pytest.fixture(scope="module")
def net_profiles():
    """(eager, compiled) profiles of the small CNN (tests.models.Net)."""
    model, x = Net().eval(), net_input()
    return pyfxprof.profile(model, (x,), **RUNS), pyfxprof.profile(torch.compile(model), (x,),
                                                                    **RUNS)


def _kernels(prof):
    return prof.nodes[~prof.nodes["op"].isin(("outside_kernels", "between_graphs"))]


def test_compiled_model_is_profiled_per_kernel_with_provenance(net_profiles):
    eager, compiled = net_profiles
    kernels = _kernels(compiled)
    assert compiled.meta["capture_mode"] == "inductor"
    assert (compiled.meta["training"], compiled.meta["given_training"],
            compiled.meta["autograd"]) == (False, False, "inference_mode")
    assert "model eval, inference_mode" in compiled.table()
    assert (compiled.meta["autocast"], compiled.meta["param_dtypes"]) == ({}, ["float32"])
    assert 0 < len(kernels) < eager.n_nodes
    assert set(kernels["op"]) <= {"fused_kernel", "extern_kernel", "fallback_op"}
    assert all(len(nodes) > 0 for nodes in kernels["source_nodes"])
    modules = {m for ms in kernels["source_modules"] for m in ms}
    assert {"block1.conv", "block2.conv", "bn", "head"} <= modules
    assert "extern_kernels.convolution" in set(kernels["target"])
    assert provenance_coverage(compiled) == 1.0
    assert compiled.nodes["name"].is_unique and compiled.nodes["name"].iloc[-1] == (
        "(outside kernels)")
    totals = compiled.samples.sum(axis=1)
    assert np.array_equal(totals, np.maximum(compiled.run_totals, compiled.samples[:, :-1].sum(1)))


def test_timed_wrapper_gives_the_compiled_models_outputs():
    model, x = Net().eval(), net_input()
    with torch.inference_mode():
        expected = torch.compile(model)(x)
        capture = InductorCapture(*compile_settings(model, True))
        capture.first_call(BoundInputs((x,)))
        executor = CompiledExecutor(capture.compiled, {}, [plan_graph(g) for g in capture.graphs])
        executor.reset(2)
        with executor:
            timed = executor.run((x,))
        timings = executor.timings()
    assert torch.equal(timed, expected)
    assert timings.intervals.shape == (1, executor.calls_per_run)
    assert (timings.intervals > 0).all()


def test_compiled_diff_matches_modules(net_profiles):
    eager, compiled = net_profiles
    d = pyfxprof.diff(eager, compiled)
    assert isinstance(d, CompiledDiff)
    frame = d.frame.set_index("module")
    assert {"block1.conv", "bn", "head", "(outside kernels)"} <= set(frame.index)
    assert np.allclose(frame["saving_ns"], frame["eager_ns"] - frame["compiled_ns"])
    assert frame.loc["block1.conv", "eager_ns"] == pytest.approx(
        float(np.median(eager.samples[:, eager.nodes["module_path"] == "block1.conv"].sum(1))))
    kernel_sum = float(np.median(compiled.samples, axis=0).sum())
    assert frame["compiled_ns"].sum() == pytest.approx(kernel_sum)
    assert "block1.conv" in d.table() and "Saving" in d.table()
    ops = d.ops.set_index(["module", "eager_op"])
    assert ops.loc[("block1.conv", "block1_conv"), "source_node"] == "conv2d"  # a leaf module
    assert "extern_kernels.convolution" in ops.loc[("block1.conv", "block1_conv"), "kernels"]
    assert ops.loc[("block1", "mul"), "source_node"] == "mul"  # a function, by name
    assert ops.loc[("head", "head"), "kernels"] == ("extern_kernels.addmm",)
    assert ops.loc[("block1", "block1_scale"), "source_node"] == ""  # an attribute read
    per_module = d.ops.groupby("module")[["eager_ns", "compiled_ns"]].sum()
    for module in ("block1", "block1.conv", "bn", "head"):
        assert per_module.loc[module].tolist() == pytest.approx(
            frame.loc[module, ["eager_ns", "compiled_ns"]].tolist())
    assert "block1_conv" in d.ops_table("block1") and "head" not in d.ops_table("block1")


def test_compiled_profile_saves_exports_and_advises(net_profiles, tmp_path):
    _, compiled = net_profiles
    compiled.save(tmp_path / "c.json")
    loaded = pyfxprof.load(tmp_path / "c.json")
    assert loaded.nodes["source_nodes"].tolist() == compiled.nodes["source_nodes"].tolist()
    assert provenance_coverage(loaded) == provenance_coverage(compiled)
    compiled.export_chrome_trace(tmp_path / "t.json")
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    nodes = {e["args"].get("node") for e in events if e.get("cat") == "cpu_op"}  # slices: by op
    assert set(_kernels(compiled)["name"]) <= nodes
    top = kernel_frame(compiled).iloc[0]
    rules = {s.rule for s in compiled.advise()}
    assert rules & {"compiled_kernels", "compiled_outside"}, (top["name"], top["pct"])
    assert "block1.conv" in pyfxprof.kernel_table(compiled)


def test_profiler_loop_times_the_compiled_models_kernels(net_profiles):
    _, profiled = net_profiles
    model, x = Net().eval(), net_input()
    compiled = torch.compile(model)
    expected, own_forward = compiled(x), vars(compiled)["forward"]
    with torch.inference_mode(), pyfxprof.Profiler(
            compiled, schedule=pyfxprof.schedule(wait=1, warmup=1, active=2)) as p:
        outputs = []
        for _ in range(4):
            outputs.append(compiled(x))
            p.step()
    assert all(torch.equal(out, expected) for out in outputs)
    assert vars(compiled)["forward"] is own_forward  # its own forward back
    prof = p.profiles[0]
    assert prof.meta["capture_mode"] == "inductor" and prof.n_runs == 2
    assert prof.meta["model"] == "Net (compiled)"
    for column in ("name", "op", "source_nodes", "source_modules"):
        assert prof.nodes[column].tolist() == profiled.nodes[column].tolist(), column
    assert [set(ops) for ops in prof.nodes["aten_ops"]] == [  # (their order may differ)
        set(ops) for ops in profiled.nodes["aten_ops"]]
    assert (prof.samples[:, :-1] > 0).all()
    assert np.array_equal(prof.samples[:, -1], np.maximum(
        prof.run_totals - prof.samples[:, :-1].sum(1), 0))
    assert 0 < prof.meta["coverage"] < 1
    assert "inductor" in p.summary()
    with pyfxprof.Profiler(compiled) as modes:  # another autograd mode: a guard variant
        with torch.inference_mode():
            compiled(x)
        with torch.no_grad():
            assert torch.equal(compiled(x), expected)
    assert [prof.n_runs for prof in modes.profiles] == [1, 1]
    assert "guard variant 2" in modes.summary()


def test_repeated_compiled_profiles_stay_compiled():
    """Dynamo's recompile limit (8 per code object; here an error when hit): profile() reuses
    its compiled capture, and the compiles it does make count in a region of their own, not
    against the user's own torch.compile of the model."""
    from pyfxprof.run.capture_cache import CAPTURES
    model, x = torch.nn.Linear(4, 4).eval(), torch.ones(2, 4)  # one extern kernel: no C++ build
    names = []
    with torch._dynamo.config.patch(fail_on_recompile_limit_hit=True):
        for call in range(10):
            if call >= 2:
                CAPTURES.clear()  # a compile each call, as for models the cache let go
            prof = pyfxprof.profile(torch.compile(model), (x,), runs=2, warmup=0, progress=False)
            names.append(tuple(_kernels(prof)["name"]))
        with torch.inference_mode():
            assert torch.equal(torch.compile(model)(x), model(x))  # would raise at the limit
    assert len(set(names)) == 1 and len(names[0]) > 0


def _busy(ns: int) -> None:
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


def test_aoti_model_is_timed_whole_with_a_statement():
    """An AOTInductor model (the real AOTICompiledModel class; its loader, the package's C++
    runner, stands in for a package that takes a minute to compile) runs 300 µs a call."""
    package = pytest.importorskip("torch.export.pt2_archive._package")
    from torch.utils import _pytree as pytree
    x = torch.randn(2, 4)

    class Loader:
        def get_call_spec(self):
            specs = (pytree.tree_flatten(((x,), {}))[1], pytree.tree_flatten(x)[1])
            return [pytree.treespec_dumps(spec) for spec in specs]

        def boxed_run(self, flat):
            _busy(300_000)
            return [torch.relu(flat[0])]

    prof = pyfxprof.profile(package.AOTICompiledModel(Loader()), (x,), **RUNS)
    assert prof.nodes["name"].tolist() == ["AOTInductor model", "(outside kernels)"]
    assert "timed whole" in prof.meta["capture_notes"][0]
    whole = float(np.median(prof.samples[:, 0]))
    assert 300_000 <= whole <= float(np.median(prof.run_totals))
    with pytest.raises(PyfxprofError, match="AOTInductor model is already compiled"):
        pyfxprof.profile(package.AOTICompiledModel(Loader()), (x,), compile=True, **RUNS)


def test_graph_without_python_wrapper_is_timed_whole():
    """A graph with no per-kernel calls to time (CUDA graphs, cpp_wrapper): one row with all
    its source nodes, the graph's own output."""
    from pyfxprof.run.compiled_profile import graph_rows, notes
    from pyfxprof.timing.compiled_executor import GraphPlan
    model, x = Net().eval(), net_input()
    with torch.inference_mode():
        capture = InductorCapture(*compile_settings(model, True))
        capture.first_call(BoundInputs((x,)))
        plans = [GraphPlan(graph, [], []) for graph in capture.graphs]
        executor = CompiledExecutor(capture.compiled, {}, plans)
        executor.reset(2)
        with executor:
            output = executor.run((x,))
        timings = executor.timings()
    assert torch.equal(output, torch.compile(model)(x))
    assert timings.intervals.shape == (1, 1) and timings.intervals[0, 0] > 0
    (row,) = graph_rows(plans[0], "Net")
    assert row["name"] == "compiled graph 0" and {"conv2d", "linear"} <= set(row["source_nodes"])
    assert "timed whole" in " ".join(notes(capture.settings, plans))
    cudagraphs = compile_settings(model, {"mode": "reduce-overhead"})[1]
    per_kernel = [plan_graph(graph) for graph in capture.graphs]
    assert "serve CUDA graphs only" in notes(cudagraphs, per_kernel)[-1]


def test_fullgraph_is_honoured_and_listed():
    model, x = GraphBreak().eval(), torch.randn(4, 8)
    with pytest.raises(PyfxprofError, match="torch.compile failed: .*") as error:
        pyfxprof.profile(torch.compile(model, fullgraph=True), (x,), **RUNS)
    assert "\n" not in str(error.value)
    with pytest.raises(PyfxprofError, match="torch.compile failed"):
        pyfxprof.profile(model, (x,), compile={"fullgraph": True}, **RUNS)
    prof = pyfxprof.profile(torch.compile(torch.nn.Linear(8, 8), fullgraph=True, dynamic=False),
                            (x,), **RUNS)
    assert "dynamic=False, fullgraph=True" in " ".join(prof.meta["capture_notes"])
    with pytest.raises(PyfxprofError, match="compile= takes True or a dict with keys .*fullgraph"):
        pyfxprof.profile(model, (x,), compile={"backend": "eager"}, **RUNS)


def test_eager_and_compiled_diff_in_either_order_and_on_the_command_line(net_profiles, tmp_path,
                                                                         capsys):
    from pyfxprof.cli.main import main
    eager, compiled = net_profiles
    reverse = pyfxprof.diff(compiled, eager, labels=("fast", "slow"))
    assert isinstance(reverse, CompiledDiff) and reverse.eager is eager
    assert reverse.labels == ("slow", "fast")
    eager.save(tmp_path / "eager.json")
    compiled.save(tmp_path / "compiled.json.gz")
    for pair in (["eager.json", "compiled.json.gz"], ["compiled.json.gz", "eager.json"]):
        assert main(["diff", *[str(tmp_path / name) for name in pair]]) == 0
        out = capsys.readouterr().out
        assert "block1.conv" in out and "Saving" in out
    assert main(["diff", str(tmp_path / "eager.json"), str(tmp_path / "compiled.json.gz"),
                 "--fail-on-regression", "5%"]) == 2
    err = capsys.readouterr().err
    assert "--fail-on-regression does not apply to an eager profile against a compiled" in err
    assert "Traceback" not in err


def test_group_by_input_shape_of_a_compiled_profile_says_why(net_profiles):
    with pytest.raises(PyfxprofError, match="a compiled profile's rows are Inductor kernels"):
        net_profiles[1].key_averages(group_by_input_shape=True)


def test_refusals_are_one_line():
    model = torch.nn.Linear(2, 2)
    with pytest.raises(PyfxprofError, match="compile= takes"):
        pyfxprof.profile(model, (torch.ones(1, 2),), compile={"bogus": 1}, **RUNS)
    with pytest.raises(PyfxprofError, match="inductor backend"):
        pyfxprof.profile(torch.compile(model, backend="eager"), (torch.ones(1, 2),), **RUNS)
    with pytest.raises(PyfxprofError, match="already torch.compile'd"):
        pyfxprof.profile(torch.compile(model), (torch.ones(1, 2),), compile={"mode": None}, **RUNS)
    with pytest.raises(PyfxprofError, match="compiled models are profiled where they are"):
        pyfxprof.profile(model, (torch.ones(1, 2),), compile=True, device="cpu", **RUNS)
    with pytest.raises(PyfxprofError, match="backward=True is not supported for compiled"):
        pyfxprof.Profiler(torch.compile(model), backward=True)


def test_compile_mode_options_are_used():
    _, settings = compile_settings(torch.nn.ReLU(), {"mode": "max-autotune-no-cudagraphs"})
    assert settings.config["max_autotune"] is True
    _, reused = compile_settings(torch.compile(torch.nn.ReLU(), mode="max-autotune-no-cudagraphs"),
                                 None)
    assert reused.config == settings.config and reused.origin == "the torch.compile'd model"


@pytest.mark.slow
def test_resnet18_compiled_against_eager():
    torchvision = pytest.importorskip("torchvision")
    model, x = torchvision.models.resnet18().eval(), torch.randn(1, 3, 32, 32)
    eager = pyfxprof.profile(model, (x,), **RUNS)
    compiled = pyfxprof.profile(model, (x,), compile=True, **RUNS)
    assert len(_kernels(compiled)) < eager.n_nodes
    assert provenance_coverage(compiled) > 0.95
    frame = CompiledDiff(eager, compiled).frame.set_index("module")
    assert {"conv1", "layer1.0.conv1", "layer4.1.bn2", "fc"} <= set(frame.index)


@pytest.mark.slow
def test_tiny_gpt2_with_dict_inputs():
    pytest.importorskip("transformers")
    from tests.tiny_transformers import tiny_gpt2
    model, inputs = tiny_gpt2(), {"input_ids": torch.randint(0, 100, (1, 16))}
    compiled = pyfxprof.profile(model, inputs, compile=True, **RUNS)
    eager = pyfxprof.profile(model, inputs, **RUNS)
    assert 0 < len(_kernels(compiled)) < eager.n_nodes
    modules = {m for ms in _kernels(compiled)["source_modules"] for m in ms}
    assert any(m.startswith("model.h.0.attn") for m in modules), sorted(modules)[:10]
    assert provenance_coverage(compiled) > 0.9
    assert "model.h.0.mlp.c_fc" in set(CompiledDiff(eager, compiled).frame["module"])
