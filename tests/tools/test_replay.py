"""Tests for pyfxprof.tools.replay (Profile.replay): a replayed conv bounded by the same conv
timed alone in the same test, the cold replay, variants judged against the as-is call with
their numeric error, and the arguments' checks."""

import math

import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.errors import ArgumentError
from pyfxprof.tools.replay_variants import TOLERANCE


def conv_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU()).eval()


@pytest.mark.timing(attempts=3)
def test_a_replayed_conv_takes_what_the_same_conv_takes_alone():
    """The truth, the conv timed alone, is measured before and after the replay (a shared
    machine's load moves both): the replay lies within 25% of the truth's range."""
    model, x = conv_net(), torch.randn(1, 16, 24, 24)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # (intra-op threads waiting at barriers on a busy machine)
    try:
        prof = pyfxprof.profile(model, (x,), runs=5, warmup=1)
        with torch.no_grad():
            alone = [pyfxprof.bench(model[0], x, budget=0.5).median]
            warm = prof.replay("0", budget=0.5).warm_ns
            alone.append(pyfxprof.bench(model[0], x, budget=0.5).median)
    finally:
        torch.set_num_threads(threads)
    assert min(alone) / 1.25 < warm < max(alone) * 1.25, (warm, alone)


def test_a_replay_shows_warm_cold_and_in_graph_and_says_which_matches():
    prof = pyfxprof.profile(conv_net(), (torch.randn(1, 16, 24, 24),), runs=5, warmup=1)
    result = prof.replay("1", budget=0.3, cache="both")
    assert result.warm_ns > 0 and result.cold_ns > 0
    assert result.in_graph_ns == prof.stats()["median"].iloc[1]
    assert result.matches in ("warm", "cold")
    distance = {c: abs(math.log(result.ratio(c))) for c in ("warm", "cold")}
    assert distance[result.matches] == min(distance.values())
    text = result.table()
    assert str(result) == text and "in graph" in text
    assert f"matches {result.matches}:" in text or f"nearest {result.matches}," in text
    assert math.isnan(prof.replay("1", budget=0.1).cold_ns)


def test_replay_leaves_the_model_its_mode_and_the_thread_count_as_they_were():
    model = conv_net().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    threads = torch.get_num_threads()
    prof = pyfxprof.profile(model, (torch.randn(1, 16, 8, 8),), runs=3, warmup=1)
    prof.replay("1", budget=0.2, variants=["threads=1", "channels_last"], cache="both")
    assert model.training and torch.get_num_threads() == threads
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_variants_give_a_verdict_row_and_their_numeric_difference():
    prof = pyfxprof.profile(conv_net(), (torch.randn(1, 16, 16, 16),), runs=3, warmup=1)
    result = prof.replay("0", budget=1.0, variants="channels_last,bf16,contiguous,"
                                                  "inference_mode,threads=1")
    rows = {row.name: row for row in result.variants}
    assert list(rows) == ["channels_last", "bf16", "contiguous", "inference_mode", "threads=1"]
    for row in rows.values():
        assert row.error == "" and row.verdict in "+-=?" and row.low <= row.change <= row.high
        assert row.median_ns > 0 and 0 <= row.q_value <= 1
    assert rows["contiguous"].max_abs_error == 0  # the same kernel on the same values
    assert rows["threads=1"].max_rel_error <= TOLERANCE[torch.float32]
    assert 0 < rows["bf16"].max_rel_error and rows["bf16"].beyond_tolerance == (
        rows["bf16"].max_rel_error > TOLERANCE[torch.bfloat16])
    assert "channels_last" in result.table() and "max abs err" in result.table()


def test_the_compile_variant_runs_the_node_compiled(inductor_cache):
    prof = pyfxprof.profile(nn.Sequential(nn.Linear(8, 8), nn.GELU()), (torch.randn(4, 8),),
                            runs=3, warmup=1)
    row, = prof.replay("1", budget=0.2, variants=["compile"]).variants
    assert row.error == "" and row.max_rel_error < TOLERANCE[torch.float32]


@pytest.mark.parametrize("options, words", [
    ({"cache": "hot"}, "cache must be one of"),
    ({"budget": 0}, "budget must be a positive"),
    ({"variants": ["fast"]}, "unknown variant 'fast'"),
    ({"variants": ["threads=x"]}, "threads=N takes a count"),
])
def test_bad_arguments_are_one_line(options, words):
    prof = pyfxprof.profile(nn.Sequential(nn.ReLU()), (torch.randn(4),), runs=2, warmup=1)
    with pytest.raises(ArgumentError, match=words):
        prof.replay("0", **options)


def test_tiny_gpt2s_attention_replays_with_its_shapes_and_a_bf16_difference():
    hf_models = pytest.importorskip("tests.hf_models")
    model, inputs = hf_models.gpt2()
    prof = pyfxprof.profile(model.eval(), inputs, runs=3, warmup=1)
    attention = prof.nodes[prof.nodes["target"].str.contains("scaled_dot_product")]
    assert len(attention) >= 1
    result = prof.replay(attention["name"].iloc[0], budget=0.4, variants=["bf16"])
    assert result.input_shapes == attention["input_shapes"].iloc[0] and result.warm_ns > 0
    bf16, = result.variants
    assert bf16.error == "" and 0 < bf16.max_abs_error < math.inf
    assert "scaled_dot_product_attention" in prof.replay_script(attention["name"].iloc[0])


class InPlace(nn.Module):
    def forward(self, x, y):
        x = x * 1.0
        x += y
        return x.add_(y)


def test_an_in_place_nodes_variants_compare_outputs_of_equal_inputs():
    x = torch.randn(64, 64)
    prof = pyfxprof.profile(InPlace(), (x, x), runs=3, warmup=1)
    names = prof.nodes.loc[prof.nodes["target"].isin(["_operator.iadd", "add_"]), "name"]
    assert len(names) == 2
    for name in names:
        rows = {r.name: r for r in prof.replay(name, budget=0.3,
                                               variants=["contiguous", "bf16"]).variants}
        assert rows["contiguous"].max_abs_error == 0
        assert 0 < rows["bf16"].max_rel_error <= TOLERANCE[torch.bfloat16]


class Steps(nn.Module):
    """A module called in a loop on inputs of the lengths given (a decoder over a growing
    cache): one node per call, all with module path "step"."""

    def __init__(self, lengths):
        super().__init__()
        self.step, self.lengths = nn.Linear(16, 16), lengths

    def forward(self, x):
        return sum(self.step(x[:n]).sum() for n in self.lengths)


@pytest.mark.parametrize("lengths", [(2, 4, 4, 8), (1, 3, 2), (5, 5), (6,)])
def test_a_module_called_with_several_shapes_replays_once_per_shape(lengths):
    prof = pyfxprof.profile(Steps(lengths), (torch.randn(8, 16),), runs=3, warmup=1)
    result = prof.replay("step", budget=0.3)
    distinct = list(dict.fromkeys(lengths))
    nodes = prof.nodes[prof.nodes["module_path"] == "step"]
    medians = prof.stats()["median"]
    rows = result.shapes if len(distinct) > 1 else ()
    assert len(rows) == (len(distinct) if len(distinct) > 1 else 0)
    for row, n in zip(rows, distinct):
        assert row.input_shapes == f"([{n}, 16] float32)" and row.warm_ns > 0
        mine = nodes[nodes["input_shapes"] == row.input_shapes]
        assert row.nodes == tuple(mine["name"])
        assert row.in_graph_ns == pytest.approx(medians.iloc[list(mine["index"])].mean())
    assert result.input_shapes == f"([{lengths[0]}, 16] float32)"
    assert ("recorded shapes" in result.table()) is (len(distinct) > 1)
    assert prof.replay(nodes["name"].iloc[-1], budget=0.1).shapes == ()  # a node: its own
