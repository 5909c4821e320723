"""The nine features every supported torch and Python must run (docs/versions.md): the subset the
compatibility stage (scripts/compat_stage.sh) runs against pyfxprof installed into a venv of
each torch it tests; on the pinned stack it runs with the rest of the suite. Models are built
here, from torch.nn alone (the stage's venvs hold no torchvision nor transformers)."""

import json

import pytest
import torch

import pyfxprof
from pyfxprof.capture.inductor import PROVENANCE_CONFIG
from pyfxprof.capture.torch_compat import known_config
from pyfxprof.cli.main import main

RUNS = dict(runs=3, warmup=1, progress=False)

pytestmark = pytest.mark.usefixtures("inductor_cache")


class Mlp(torch.nn.Module):
    """Linear, ReLU, Linear: fx traces it whole."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Branch(torch.nn.Module):
    """A branch on a tensor's value: fx cannot trace it, Dynamo splits it into two graphs."""

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 8)

    def forward(self, x):
        x = torch.relu(self.a(x))
        if x.sum() > 0:
            x = x * 2
        return self.b(x)


def _inputs():
    torch.manual_seed(0)
    return torch.randn(4, 16)


def _timed_rows(prof) -> int:
    """Rows of a profile with a positive median time (every timed node or kernel)."""
    return int((prof.stats()["median"] > 0).sum())


def test_fx_profile_counts_flops_and_times_every_node():
    prof = pyfxprof.profile(Mlp().eval(), (_inputs(),), **RUNS)
    assert prof.meta["capture_mode"] == "fx"
    assert _timed_rows(prof) == len(prof.nodes) >= 3
    assert prof.nodes["flops"].sum() >= 2 * 4 * (16 * 32 + 32 * 8)


def test_a_model_with_a_graph_break_reaches_the_dynamo_rung():
    prof = pyfxprof.profile(Branch().eval(), (_inputs(),), **RUNS)
    assert prof.meta["capture_mode"] == "dynamo", prof.meta.get("capture_notes")
    assert prof.meta["graphs"] == 2 and prof.meta["graph_breaks"]


def test_backward_times_the_gradient_nodes_and_keeps_the_users_gradients():
    model = Mlp()
    prof = pyfxprof.profile(model, (_inputs(),), backward=True, **RUNS)
    assert prof.backward_samples is not None and (prof.backward_samples > 0).any()
    assert all(p.grad is None for p in model.parameters())


def test_a_compiled_model_is_profiled_per_kernel_where_torch_tracks_their_provenance():
    compiled = torch.compile(Mlp().eval())
    prof = pyfxprof.profile(compiled, (_inputs(),), **RUNS)
    assert prof.meta["capture_mode"] == "inductor"
    timed = prof.nodes[(prof.stats()["median"] > 0).to_numpy()]
    if known_config("torch._inductor.config", PROVENANCE_CONFIG):
        kernels = timed[timed["op"].str.endswith("kernel")]
        assert len(kernels) >= 3 and set(kernels["module_path"]) >= {"a", "b"}
    else:  # (torch 2.8) the compiled graph is timed as a whole
        assert list(timed["op"]) == ["compiled_graph", "outside_kernels"]


def test_bench_times_a_callable():
    m = pyfxprof.bench(torch.add, torch.ones(64), torch.ones(64), budget=0.2)
    assert 0 < m.median < 1e7 and m.calls > 0  # ns


def test_compare_gives_a_verdict_per_node():
    control, test = Mlp().eval(), Mlp().eval()
    diff = pyfxprof.compare(control, test, (_inputs(),), blocks=4, runs_per_block=2, warmup=1,
                            check_outputs=False, progress=False)
    frame = diff.changes()
    assert list(frame["name"]) == ["a", "relu", "b"]
    assert (frame["ci_low"] <= frame["ci_high"]).all() and "relu" in diff.table()


def test_the_profiler_loop_profiles_the_calls_of_a_model():
    model, x = Mlp().eval(), _inputs()
    with torch.no_grad(), pyfxprof.Profiler(model) as p:
        outputs = [model(x) for _ in range(3)]
    with torch.no_grad():
        assert all(torch.equal(out, model(x)) for out in outputs)
    assert len(p.profiles) == 1 and _timed_rows(p.profiles[0]) >= 3


def test_an_exported_program_is_profiled_per_aten_node():
    x = _inputs()
    program = torch.export.export(Mlp().eval(), (x,))
    prof = pyfxprof.profile(program, (x,), **RUNS)
    assert prof.meta["capture_mode"] == "exported"
    assert _timed_rows(prof) >= 3


def test_the_cli_profiles_its_default_model(tmp_path, capsys):
    saved = tmp_path / "p.json"
    code = main(["profile", "--input", "1x3x32x32", "--runs", "2", "--warmup", "1", "--top", "3",
                 "--threads", "1", "--save", str(saved)])
    assert code == 0 and "resnet18 on cpu" in capsys.readouterr().out
    assert json.loads(saved.read_text())["meta"]["model"] == "resnet18"
