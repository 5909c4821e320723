"""Programs made by torch.export, profiled the four ways a user holds them (issue 38):
profile(ep), profile(ep.module()), the Profiler loop on ep.module() and the CLI, for an MLP and
a ResNet-18; a tiny GPT-2 exported with a dynamic sequence length; autocast in the header; the
diff of an eager profile against an exported one."""

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.data.validate import model_nodes
from pyfxprof.capture.ladder import prepare
from pyfxprof.cli.main import main
from pyfxprof.errors import PyfxprofError
from pyfxprof.timing.executors import executor_for
from tests import exported_models as em

PROGRAMS = {"mlp": (em.mlp_program, em.MLP_SHAPE, "Sequential", "Sequential"),
            "resnet": (em.resnet_program, em.RESNET_SHAPE, "ResNet18", "ResNet18")}
#: Module path of the program's own shape guards (not a module of the model).
GUARDS = "_guards_fn"


def module_share(prof) -> float:
    """Share of the nodes' median time on nodes whose module path is a module of the model."""
    nodes = model_nodes(prof.nodes)  # not the (Python outside the graph) row
    medians = np.median(prof.samples[:, nodes], axis=0)
    known = ~prof.nodes.loc[nodes, "module_path"].isin(("", GUARDS)).to_numpy()
    return float(medians[known].sum() / medians.sum())


def check_exported_profile(prof, name: str) -> None:
    """Per-node aten rows, module paths for >= 95% of the time, the header says exported."""
    assert prof.meta["capture_mode"] == "exported" and prof.meta["model"] == name
    ops = prof.nodes.loc[prof.nodes["op"] == "call_function", "target"]
    assert len(ops) > 0 and ops.str.startswith("torch.ops.aten.").all()
    assert module_share(prof) >= 0.95
    header = prof.table().splitlines()[0]
    assert "capture exported" in header and "model exported" in header


@pytest.mark.parametrize("which", sorted(PROGRAMS))
def test_profile_of_the_program_and_of_its_module(which):
    program, shape, name, _ = PROGRAMS[which]
    ep, x = program(), torch.randn(*shape)
    check_exported_profile(pyfxprof.profile(ep, (x,), runs=2, warmup=1, progress=False), name)
    module = ep.module()
    prof = pyfxprof.profile(module, (x,), runs=2, warmup=1, progress=False)
    check_exported_profile(prof, name)
    assert module.training  # as torch.export made it: never switched


@pytest.mark.parametrize("which", sorted(PROGRAMS))
@pytest.mark.parametrize("mode", ["codegen", "interpreter"])
def test_timed_graph_gives_the_programs_outputs(which, mode):
    program, shape, _, _ = PROGRAMS[which]
    module, x = program().module(), torch.randn(*shape)
    prepared = prepare(module, (x,))
    with torch.inference_mode():
        timed = executor_for(module, prepared, mode, False).run(prepared.args)
        expected = module(x)
    assert torch.equal(timed, expected)


@pytest.mark.parametrize("which", sorted(PROGRAMS))
def test_profiler_loop_on_the_module(which):
    program, shape, name, _ = PROGRAMS[which]
    module, x = program().module(), torch.randn(*shape)
    with torch.no_grad():
        expected = module(x)
        with pyfxprof.Profiler(module) as loop:
            outputs = [module(x) for _ in range(3)]
    assert all(torch.equal(out, expected) for out in outputs)
    [prof] = loop.profiles
    check_exported_profile(prof, name)
    assert prof.meta["autograd"] == "no_grad" and prof.meta["exported"] is True


@pytest.mark.parametrize("spec", ["mlp_program", "mlp_module"])
def test_cli_prints_the_table(capsys, spec):
    shape = "x".join(map(str, em.MLP_SHAPE))
    code = main(["profile", f"tests.exported_models:{spec}", "--input", shape, "--runs", "2",
                 "--warmup", "0"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(f"pyfxprof — {spec} on cpu") and "capture exported" in out
    assert "model exported" in out.splitlines()[0]
    rows = [line.split() for line in out.splitlines() if line[:2].strip().isdigit()]
    assert {row[1] for row in rows} >= {"linear", "relu", "linear_1", "linear_2"}


def test_cli_backward_on_a_program_is_one_line(capsys):
    assert main(["profile", "tests.exported_models:mlp_program", "--input", "64x512",
                 "--backward"]) == 2
    assert "backward=True needs the eager model" in capsys.readouterr().err


def test_gpt2_with_a_dynamic_sequence_length():
    ep = em.gpt2_program()
    for length in (8, 40):
        prof = pyfxprof.profile(ep, (em.token_ids(length),), runs=2, warmup=0, progress=False)
        assert prof.meta["input_shapes"] == f"([{em.GPT2_BATCH}, {length}] int64)"
        assert prof.meta["capture_mode"] == "exported"
        # every node has its module but the program's shape guards (a few % of this tiny
        # model's time: its guards of a dynamic dimension are evaluated in Python)
        nodes = prof.nodes[model_nodes(prof.nodes)]  # not the (Python outside the graph) row
        assert nodes.loc[nodes["module_path"] == "", "name"].empty
        attention = prof.nodes[prof.nodes["target"].str.contains("scaled_dot_product")]
        assert attention["module_path"].str.endswith(".attn").all() and len(attention) == 2
    with pytest.raises(PyfxprofError, match=r"shape\[1\] to be <= 64, but got 80") as error:
        pyfxprof.profile(ep, (em.token_ids(80),), runs=1, warmup=0, progress=False)
    assert "\n" not in str(error.value)


def test_autocast_bf16_is_in_the_header_and_meta(tmp_path):
    ep, x = em.mlp_program(), torch.randn(*em.MLP_SHAPE)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        prof = pyfxprof.profile(ep, (x,), runs=2, warmup=0, progress=False)
    assert prof.meta["autocast"] == {"cpu": "bfloat16"}
    numeric = [line for line in prof.table().splitlines() if line.startswith("numeric:")]
    assert numeric == ["numeric: autocast cpu bfloat16 · parameters float32 · inputs float32 "
                       "contiguous · inference_mode"]
    prof.save(tmp_path / "bf16.json")
    loaded = pyfxprof.load(tmp_path / "bf16.json")
    assert loaded.meta["autocast"] == {"cpu": "bfloat16"} and loaded.meta["exported"] is True
    assert numeric[0] in loaded.table() and "model exported" in loaded.table()
    plain = pyfxprof.profile(ep, (x,), runs=2, warmup=0, progress=False)
    assert plain.meta["autocast"] == {} and "numeric: autocast off" in plain.table()


def test_diff_of_eager_and_exported_lines_up_modules_and_ops():
    x = torch.randn(*em.MLP_SHAPE)
    eager = pyfxprof.profile(em.mlp(), (x,), runs=2, warmup=0, progress=False)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        exported = pyfxprof.profile(em.mlp_program(), (x,), runs=2, warmup=0, progress=False)
    d = pyfxprof.diff(eager, exported, labels=("eager", "exported"))
    assert type(d).__name__ == "ExportedDiff"
    assert {"0", "1", "2", "3", "4"} <= set(d.frame["module"])
    pairs = dict(zip(d.ops["eager_op"], d.ops["source_node"]))
    assert pairs["_0"] == "linear" and pairs["_2"] == "linear_1" and pairs["_4"] == "linear_2"
    table = d.table()
    assert table.splitlines()[0] == ("numeric mode differs (eager vs exported): autocast off vs "
                                     "autocast cpu bfloat16")


def test_profiler_loop_on_a_dynamic_program_profiles_each_length():
    module = em.gpt2_program().module()
    with torch.no_grad():
        expected = module(em.token_ids(8))
        with pyfxprof.Profiler(module) as loop:
            short, _ = module(em.token_ids(8)), module(em.token_ids(30))
            with pytest.raises(AssertionError, match="Guard failed"):  # as unprofiled
                module(em.token_ids(80))
    assert torch.equal(short, expected)
    assert [p.meta["input_shapes"] for p in loop.profiles] == ["([2, 8] int64)",
                                                              "([2, 30] int64)"]
