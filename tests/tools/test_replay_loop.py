"""Profile.replay and replay_script on a Profiler loop's profile whose calls ran at several
shapes (a memory growing call by call, a tiny GPT-2's decode steps over a growing cache): one
replay per recorded shape, each beside the in-graph median of the calls made at it (the known
truth: the samples' rows the loop matched to that shape, recomputed here), over generated
length sequences and dtypes; a node that saw one shape is unchanged; saved and loaded; the
CLI."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.cli import main as cli
from pyfxprof.errors import ArgumentError

MEMORY_MODEL = "tests.tools.test_replay_loop:with_memory"


class WithMemory(torch.nn.Module):
    """A one-token query over a memory of any length (the loop's second tensor: dynamic)."""

    def __init__(self) -> None:
        super().__init__()
        self.q = torch.nn.Linear(16, 16)
        self.o = torch.nn.Linear(16, 16)

    def forward(self, x, mem):
        scores = self.q(x) @ mem.transpose(1, 2)
        return self.o(scores.softmax(-1) @ mem)


def with_memory() -> torch.nn.Module:
    torch.manual_seed(0)
    return WithMemory().eval()


def _profiled(lengths, dtype=torch.float32, schedule=None):
    model = with_memory().to(dtype)
    with torch.no_grad(), pyfxprof.Profiler(model, schedule=schedule) as p:
        for length in lengths:
            model(torch.randn(1, 1, 16, dtype=dtype), torch.randn(1, length, 16, dtype=dtype))
            p.step()
    return p.profiles[-1]


def _truth(prof, node):
    """Per distinct length of the memory: (the calls made at it, their in-graph median),
    from the samples' rows the loop matched to each shape."""
    sizes = prof.meta["loop"]["sizes"]
    index = int(prof.nodes.loc[prof.nodes["name"] == node, "index"].iloc[0])
    runs = np.asarray(sizes["runs"])
    return {values[0]: (int((runs == k).sum()), float(np.median(prof.samples[runs == k, index])))
            for k, values in enumerate(sizes["seen"])}


def _shapes(text: str) -> list[list[int]]:
    """The tensor shapes in a replay's shapes text, e.g. '([1, 1, 5] float32, -1)'."""
    return [json.loads(f"[{found}]") for found in re.findall(r"\[([\d, ]+)\]", text)]


LENGTH_CASES = [[4, 6, 5, 8, 6, 4], [3, 3, 9], [12, 7, 7, 7, 20, 2 + 3]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("lengths", LENGTH_CASES)
def test_a_node_is_replayed_once_per_length_beside_those_calls_median(lengths, dtype):
    prof = _profiled(lengths, dtype)
    sizes = prof.meta["loop"]["sizes"]
    assert sorted(v[0] for v in sizes["seen"]) == sorted(set(lengths))
    assert [sizes["seen"][k][0] for k in sizes["runs"]] == lengths  # each call, in order
    result = prof.replay("softmax", budget=0.3)
    truth = _truth(prof, "softmax")
    assert len(result.shapes) == len(set(lengths))
    name = str(dtype).replace("torch.", "")
    for row, length in zip(result.shapes, sorted(set(lengths))):
        assert row.input_shapes == f"([1, 1, {length}] {name}, -1)"
        assert (row.calls, row.in_graph_ns) == pytest.approx(truth[length])
        assert row.own_in_graph and row.warm_ns > 0
    assert result.input_shapes == result.shapes[0].input_shapes
    text = result.table()
    assert f"{len(set(lengths))} recorded shapes" in text
    assert f"({truth[min(lengths)][0]} call" in text


def test_a_node_that_saw_one_shape_replays_as_before():
    prof = _profiled([4, 6, 5])
    result = prof.replay("linear", budget=0.2)  # the query's Linear: [1, 1, 16] each call
    assert result.shapes == () and result.recorded_shapes == 0
    index = int(prof.nodes.loc[prof.nodes["name"] == "linear", "index"].iloc[0])
    assert result.in_graph_ns == pytest.approx(float(prof.stats()["median"].iloc[index]))
    assert "recorded shapes" not in result.table()


def test_warmup_steps_are_not_recorded_shapes():
    lengths = [30, 31, 4, 5, 6, 5]  # the first two: a wait and a warm-up step
    prof = _profiled(lengths, schedule=pyfxprof.schedule(wait=1, warmup=1, active=4))
    sizes = prof.meta["loop"]["sizes"]
    assert [sizes["seen"][k][0] for k in sizes["runs"]] == lengths[2:]
    assert [row.input_shapes for row in prof.replay("softmax", budget=0.2).shapes] == [
        f"([1, 1, {n}] float32, -1)" for n in (4, 5, 6)]


def test_shapes_caps_the_replays_evenly_and_says_how_many_there_were():
    prof = _profiled(list(range(3, 13)))
    result = prof.replay("matmul_1", budget=0.3, shapes=4)
    lengths = [_shapes(r.input_shapes)[0][2] for r in result.shapes]
    assert lengths == [3, 6, 9, 12] and result.recorded_shapes == 10
    assert "4 of 10 recorded shapes, evenly spread" in result.table()
    assert "4 of 10 recorded shapes" in result._repr_html_()
    with pytest.raises(ArgumentError, match="shapes must be"):
        prof.replay("matmul_1", shapes=0)


def test_calls_not_matched_to_shapes_show_the_nodes_median_and_say_so():
    prof = _profiled([4, 6, 6])
    prof.meta["loop"]["sizes"]["runs"] = None  # (a run that lost records: not matched)
    result = prof.replay("softmax", budget=0.2)
    node_median = float(prof.stats()["median"].iloc[
        int(prof.nodes.loc[prof.nodes["name"] == "softmax", "index"].iloc[0])])
    assert [r.own_in_graph for r in result.shapes] == [False, False]
    assert all(r.in_graph_ns == pytest.approx(node_median) for r in result.shapes)
    assert "its calls were not matched to shapes" in result.table()


def test_saved_and_loaded_the_shapes_replay_alike(tmp_path):
    prof = _profiled([5, 7, 9, 7])
    prof.save(tmp_path / "loop.json")
    loaded = pyfxprof.load(tmp_path / "loop.json")
    assert loaded.meta["loop"]["sizes"] == prof.meta["loop"]["sizes"]
    assert loaded.nodes["call_dims"].tolist() == prof.nodes["call_dims"].tolist()
    before, after = (p.replay("matmul_1", budget=0.2) for p in (prof, loaded))
    assert [(r.input_shapes, r.calls, r.in_graph_ns) for r in before.shapes] == [
        (r.input_shapes, r.calls, r.in_graph_ns) for r in after.shapes]


def test_a_profile_without_the_sizes_replays_its_one_recorded_call():
    prof = _profiled([5, 7])
    del prof.meta["loop"]["sizes"]  # (a profile saved before the sizes were recorded)
    result = prof.replay("softmax", budget=0.2)
    assert result.shapes == () and result.input_shapes.startswith("([1, 1, 5]")


def _run(script: Path) -> str:
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_script_times_one_shape_or_all(tmp_path):
    prof = _profiled([4, 9, 6])
    one, every = tmp_path / "one.py", tmp_path / "all.py"
    one.write_text(prof.replay_script("matmul_1", shape=2))
    every.write_text(prof.replay_script("matmul_1", shape="all"))
    out = _run(one)
    assert out.count("median ") == 1 and "(1, 9, 16)" in out
    out = _run(every)
    assert out.count("median ") == 3
    assert [n in out for n in ("(1, 4, 16)", "(1, 6, 16)", "(1, 9, 16)")] == [True] * 3
    with pytest.raises(ArgumentError, match="from 0 to 2"):
        prof.replay_script("matmul_1", shape=3)


@pytest.fixture
def repo_root_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))


def test_the_cli_replays_a_saved_loop_profile_per_shape(repo_root_on_path, tmp_path, capsys):
    saved, script = tmp_path / "loop.json", tmp_path / "node.py"
    _profiled([4, 8, 6, 8]).save(saved)
    assert cli.main(["replay", MEMORY_MODEL, "softmax", "--input", "1x1x16",
                     "--profile", str(saved), "--budget", "0.5", "--shapes", "2",
                     "--script", str(script)]) == 0
    out = capsys.readouterr().out
    assert "2 of 3 recorded shapes" in out and "[1, 1, 4] float32" in out
    assert "[1, 1, 8] float32" in out and "(2 calls)" in out
    assert _run(script).count("median ") == 3


def test_gpt2_decode_steps_replay_attention_at_each_cache_length():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64,
                                     n_positions=64, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    prompt, new = 6, 7
    with pyfxprof.Profiler(model) as p:
        model.generate(torch.randint(1, 64, (1, prompt)), max_new_tokens=new,
                       min_new_tokens=new, do_sample=False, pad_token_id=0)
    decode = p.profiles[-1]
    sdpa = decode.nodes.loc[decode.nodes["target"].str.contains("scaled_dot_product"), "name"]
    result = decode.replay(sdpa.iloc[0], budget=0.5, variants=["bf16"])
    steps = new - 1  # decode steps: every token after the prefill's
    assert len(result.shapes) == steps and sum(r.calls for r in result.shapes) == steps
    keys = [_shapes(r.input_shapes)[1] for r in result.shapes]
    assert [k[2] for k in keys] == list(range(prompt + 1, prompt + 1 + steps))
    assert all(math.isfinite(r.warm_ns) and r.calls == 1 for r in result.shapes)
    assert result.variants[0].name == "bf16" and math.isfinite(result.variants[0].max_abs_error)


def test_dims_it_cannot_evaluate_replay_the_recorded_call():
    prof = _profiled([5, 7])
    at = prof.nodes.index[prof.nodes["name"] == "softmax"][0]
    dims = prof.nodes.at[at, "call_dims"]
    symbol = prof.meta["loop"]["sizes"]["symbols"][0]
    prof.nodes.at[at, "call_dims"] = dims.replace(f'"{symbol}"', '"u0 + 1"')  # (not recorded)
    result = prof.replay("softmax", budget=0.2)
    assert result.shapes == () and result.input_shapes.startswith("([1, 1, 5]")
