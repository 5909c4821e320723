"""Tests for pyfxprof.run.alone: profile() times the nodes of its top rows alone and every
report shows the figure beside the row: a generated table of models (module chains,
functions, methods, in-place ops), ResNet-like blocks at the defaults, the figure bounded by
the module timed alone in the same test, the budget, the off switch, the rows asked, the
outside row blank with its reason, a saved profile's round trip, and the model untouched."""

import math
import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import pyfxprof
from pyfxprof.data.profile import Profile
from pyfxprof.errors import ArgumentError
from pyfxprof.run import alone
from pyfxprof.run.alone import alone_rows, asked_rows, top_rows

# torch on one thread: on a shared machine its thread pool's waits swamp small nodes
pytestmark = pytest.mark.usefixtures("one_thread")


class Chain(nn.Module):
    """A sequence of steps, each a module or a function of the running value."""

    def __init__(self, *steps):
        super().__init__()
        self.mods = nn.ModuleList([s for s in steps if isinstance(s, nn.Module)])
        self.steps = steps

    def forward(self, x):
        mods = iter(self.mods)
        for step in self.steps:
            x = next(mods)(x) if isinstance(step, nn.Module) else step(x)
        return x


def _conv_bn_relu():
    return Chain(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True))


#: (model, input, the nodes timed alone) — modules, functions, methods and in-place ops.
MODELS = [
    ("conv-bn-relu", _conv_bn_relu, (1, 3, 24, 24), ["mods_0", "mods_1", "mods_2"]),
    ("linear-relu", lambda: Chain(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8)),
     (4, 64), ["mods_0", "mods_1", "mods_2"]),
    ("functions", lambda: Chain(nn.Linear(32, 32), torch.tanh, lambda x: F.gelu(x) * 2.0),
     (8, 32), ["tanh", "gelu", "mul"]),
    ("methods and in place", lambda: Chain(nn.Linear(32, 32), lambda x: x.sigmoid(),
                                           lambda x: x.add_(1.0), torch.relu_),
     (8, 32), ["sigmoid", "add_", "relu_"]),
]


@pytest.mark.parametrize("label,make,shape,nodes", MODELS, ids=[m[0] for m in MODELS])
def test_every_node_kind_asked_is_timed_alone_and_shown_beside_its_row(label, make, shape,
                                                                         nodes):
    torch.manual_seed(0)
    prof = pyfxprof.profile(make().eval(), (torch.randn(*shape),), runs=5, warmup=1,
                            progress=False, alone=nodes)
    frame = prof.to_dataframe().set_index("name")
    for node in nodes:
        row = frame.loc[node]
        assert row["alone_low_ns"] <= row["alone_ns"] <= row["alone_high_ns"], row
        assert math.isfinite(row["alone_ns"]) and row["alone_ns"] > 0, row
        assert row["alone_note"].startswith("warm replay"), row["alone_note"]
    others = frame.drop(index=nodes)
    assert others["alone_ns"].isna().all() and prof.meta["alone"]["timed"] == len(nodes)
    table = prof.table(width=None)
    assert "Alone" in table and "Row/alone" in table
    for node in nodes:  # the row's line carries the node's figure and the ratio
        line = next(t for t in table.splitlines() if f" {node} " in t)
        ratio = frame.loc[node, "median"] / frame.loc[node, "alone_ns"]
        assert f"{ratio:.2f}x" in line, line


#: Steps of the generated chains, each keeping a (rows, 32) float input's shape.
STEPS = [lambda: nn.Linear(32, 32), lambda: nn.ReLU(), lambda: nn.ReLU(inplace=True),
         lambda: nn.LayerNorm(32), lambda: torch.tanh, lambda: (lambda x: x.sigmoid()),
         lambda: (lambda x: x.mul_(0.5)), lambda: (lambda x: x + 1.0),
         lambda: (lambda x: torch.clamp_(x, min=0.0))]


@pytest.mark.parametrize("seed", range(4))
def test_generated_chains_time_every_node_asked(seed):
    """Random chains of modules, functions, methods and in-place ops (after a Linear, so no
    in-place op writes to the input): every node is timed alone and shown."""
    rng = np.random.default_rng(seed)
    steps = [nn.Linear(32, 32)] + [STEPS[i]() for i in rng.integers(0, len(STEPS), 4)]
    model = Chain(*steps).eval()
    names = pyfxprof.profile(model, (torch.randn(8, 32),), runs=2, warmup=0, progress=False,
                             alone=False).nodes["name"].tolist()
    prof = pyfxprof.profile(model, (torch.randn(8, 32),), runs=3, warmup=1, progress=False,
                            alone=names)
    frame = prof.to_dataframe().set_index("name").loc[names]
    assert (frame["alone_ns"] > 0).all(), frame["alone_note"].tolist()
    assert prof.meta["alone"]["timed"] == len(names)
    assert prof.table(width=None).count("x ") >= len(names)


def _block_ns(call, calls: int) -> float:
    """ns per call of `calls` back-to-back calls."""
    started = time.perf_counter_ns()
    for _ in range(calls):
        call()
    return (time.perf_counter_ns() - started) / calls


def test_the_figure_is_the_module_alone_as_timed_here():
    """bn's Alone against the same BatchNorm on an input of the same shape timed in a loop
    here, the truth's blocks taking turns with three profiles (the medians of both: one
    preempted block or replay on a shared machine moves neither)."""
    torch.manual_seed(0)
    model = _conv_bn_relu().eval()
    x = torch.randn(1, 3, 24, 24)
    bn, inner = model.mods[1], model.mods[0](x).detach()
    truth, figures, notes = [], [], []
    with torch.inference_mode():
        for _ in range(3):
            truth += [_block_ns(lambda: bn(inner), 50) for _ in range(10)]
            prof = pyfxprof.profile(model, (x,), runs=10, warmup=2, progress=False,
                                    alone=["mods.1"])
            row = prof.to_dataframe().set_index("name").loc["mods_1"]
            figures.append(row["alone_ns"])
            notes.append(row["alone_note"])
    figure, expected = float(np.nanmedian(figures)), float(np.median(truth))
    assert expected / 2 < figure < expected * 2, (figures, expected, notes)


def test_defaults_time_the_top_rows_of_a_resnet_like_model_within_the_budget():
    torch.manual_seed(0)
    model = nn.Sequential(*[_conv_bn_relu() if i == 0 else Chain(
        nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True))
        for i in range(3)], nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10)).eval()
    x = torch.randn(1, 3, 32, 32)
    # runs enough that the budget (a tenth of the profile's time) holds two top nodes' cost
    # (1.5 node budgets each) on a fast machine too: the timed runs alone 40 node budgets
    with torch.inference_mode():
        model(x)
        begin = time.perf_counter()
        for _ in range(20):
            model(x)
        call_s = (time.perf_counter() - begin) / 20
    runs = max(200, math.ceil(40 * alone.NODE_BUDGET_S / call_s))
    prof = pyfxprof.profile(model, (x,), runs=runs, progress=False)
    meta, wall = prof.meta["alone"], prof.meta["wall_s"]
    before = sum(v for k, v in wall.items() if k != "alone")
    assert meta["rows"] == "top" and meta["budget_s"] <= alone.BUDGET_SHARE * before + 1e-9
    assert meta["timed"] >= 1, prof.to_dataframe()["alone_note"].tolist()
    # the step stops starting nodes once its budget is near: one node's overrun at most
    most = max(alone._node_budget(m) for m in prof.stats()["median"])
    assert wall["alone"] <= meta["budget_s"] + 4 * most, (wall, meta)
    frame = prof.to_dataframe()
    timed = frame[frame["alone_ns"].notna()]
    assert len(timed) <= alone.MAX_ROWS
    nodes = frame[frame["op"] != "outside_graph"]
    chosen = top_rows(nodes["median"].to_numpy(), float(np.median(prof.run_totals)),
                      alone._kinds(nodes))
    assert set(timed["name"]) <= set(nodes["name"].iloc[chosen])
    assert "Alone" in prof.table(width=None)


def test_the_html_report_and_the_notebook_show_the_figures_and_the_header_says_what_they_are(
        tmp_path):
    prof = pyfxprof.profile(_conv_bn_relu().eval(), (torch.randn(1, 3, 24, 24),), runs=5,
                            warmup=1, progress=False, alone=["mods_1"])
    text = prof.table(width=None)
    assert "Alone: the node replayed alone, warm" in text
    note = next(line for line in text.splitlines() if line.startswith("Alone blank"))
    assert "not among the rows timed alone" in note, note
    prof.export_html(tmp_path / "r.html")
    for html in ((tmp_path / "r.html").read_text(), prof._repr_html_()):
        assert "Row/alone" in html and "Alone blank" in html


def test_alone_false_times_nothing_and_keeps_the_old_pointer():
    prof = pyfxprof.profile(_conv_bn_relu().eval(), (torch.randn(1, 3, 24, 24),), runs=3,
                            warmup=1, progress=False, alone=False)
    assert "alone" not in prof.meta and "alone_ns" not in prof.nodes
    assert "alone" not in prof.meta["wall_s"]
    text = prof.table(width=None)
    assert "Row/alone" not in text and "prof.replay(node)" in text


def test_a_profile_saved_keeps_its_figures_and_an_older_file_loads_without(tmp_path):
    prof = pyfxprof.profile(_conv_bn_relu().eval(), (torch.randn(1, 3, 24, 24),), runs=3,
                            warmup=1, progress=False, alone=["mods_0", "mods_2"])
    prof.save(tmp_path / "p.json")
    loaded = pyfxprof.load(tmp_path / "p.json")
    columns = list(alone.COLUMNS)
    pd.testing.assert_frame_equal(loaded.nodes[columns], prof.nodes[columns])
    assert loaded.meta["alone"] == prof.meta["alone"]
    assert loaded.table(width=None) == prof.table(width=None)
    older = Profile(prof.nodes.drop(columns=columns), prof.samples,
                                          prof.run_totals,
                                          {k: v for k, v in prof.meta.items() if k != "alone"})
    older.save(tmp_path / "old.json")
    text = pyfxprof.load(tmp_path / "old.json").table(width=None)
    assert "Row/alone" not in text and "prof.replay(node)" in text


def test_the_replays_run_on_copies_never_on_the_model():
    class Counting(nn.Module):
        """A leaf whose forward counts its calls in its own state."""

        def __init__(self):
            super().__init__()
            self.calls, self.fc = 0, nn.Linear(8, 8)

        def forward(self, x):
            self.calls += 1
            return self.fc(x)

    counts = []
    for rows in (False, ["mods.0"]):
        model = Chain(Counting(), nn.ReLU()).eval()
        state = {k: v.clone() for k, v in model.state_dict().items()}
        prof = pyfxprof.profile(model, (torch.randn(2, 8),), runs=3, warmup=1,
                                progress=False, alone=rows, leaf_modules=[Counting])
        counts.append(model.mods[0].calls)
        assert all(torch.equal(v, model.state_dict()[k]) for k, v in state.items())
    assert counts[0] == counts[1], counts
    assert prof.to_dataframe().set_index("name").loc["mods_0", "alone_ns"] > 0


def test_a_node_not_in_the_model_is_refused_before_any_run():
    with pytest.raises(ArgumentError, match="no node 'nope'"):
        pyfxprof.profile(_conv_bn_relu().eval(), (torch.randn(1, 3, 8, 8),), runs=2,
                         progress=False, alone=["nope"])


@pytest.mark.parametrize("value", [None, 3, [], [""], [1], "", object()])
def test_bad_alone_values_are_one_line(value):
    with pytest.raises(ArgumentError, match="alone must be True"):
        alone_rows(value)


def test_the_rows_chosen_and_asked():
    assert alone_rows("bn1, relu") == ("bn1", "relu") and alone_rows(False) is False
    frame = pd.DataFrame({"name": ["a_0", "b"], "module_path": ["a.0", "b"]})
    assert asked_rows(frame, ("a.0", "b", "a_0")) == [0, 1, 0]
    medians = np.array([0.5, 50.0, 9.0, 9.0, 0.1])
    assert top_rows(medians, 100.0) == [1, 2, 3]  # ties keep order; under 1% of the run left
    assert len(top_rows(np.full(20, 10.0), 100.0)) == alone.MAX_ROWS


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["conv", "bn", "relu", "add", None]),
                          st.floats(0.0, 1e6)), min_size=1, max_size=30))
def test_the_top_rows_hold_the_largest_row_of_each_kind(rows):
    kinds = [k for k, _ in rows]
    medians = np.array([m for _, m in rows])
    run = float(medians.sum()) or 1.0
    chosen = top_rows(medians, run, kinds)
    assert len(chosen) == len(set(chosen)) <= alone.MAX_ROWS
    assert list(medians[chosen]) == sorted(medians[chosen], reverse=True)
    eligible = {k for k, m in rows if k is not None and m >= alone.KIND_SHARE * run}
    if len(eligible) <= alone.MAX_ROWS:  # each kind's largest row is there
        for kind in eligible:
            largest = max(m for k, m in rows if k == kind)
            assert any(kinds[i] == kind and medians[i] == largest for i in chosen), kind
    big = [i for i in range(len(rows)) if medians[i] >= alone.MIN_SHARE * run]
    assert len(chosen) == min(alone.MAX_ROWS, len(set(big) | set(
        i for kind in eligible for i in [max((j for j in range(len(rows)) if kinds[j] == kind),
                                              key=lambda j: (medians[j], -j))])))
