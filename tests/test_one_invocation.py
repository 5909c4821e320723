"""Per-run figures come from one invocation (DESIGN.md): each timed run is made inside the
user's call, so a node's spike stays that node's, a run's total is its own call, and the
nodes of run i fit inside call i (run/user_call.py's AroundRuns, data/outside_graph.py)."""

import itertools

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof import _C
from pyfxprof.capture.ladder import prepare
from pyfxprof.data.outside_graph import OUTSIDE_GRAPH, outside_column
from pyfxprof.run.timed_runs import timed_runs
from pyfxprof.run.user_call import UserCall
from pyfxprof.timing.executors import executor_for
from tests.latency_models import Fixed

NODE_NS = 300_000
#: The spike: 5 ms on every `period`-th call (50 µs otherwise), as in issue 46.
SPIKE_NS, CALM_NS = 5_000_000, 50_000
_SPIKY = {"period": 10, "calls": 0}


def spiky(x):
    """Spins SPIKE_NS on every _SPIKY["period"]-th call (counted across every caller: the
    analysis run, the warm-up and timed runs, the breakdown and the plain calls), else
    CALM_NS."""
    _SPIKY["calls"] += 1
    _C._spin_ns(SPIKE_NS if _SPIKY["calls"] % _SPIKY["period"] == 0 else CALM_NS)
    return x


torch.fx.wrap("spiky")


class SpikyFunction(torch.nn.Module):
    """A wrapped function (one call_function node) among two NODE_NS leaves, at `place`."""

    def __init__(self, place: int):
        super().__init__()
        self.place, self.first, self.last = place, Fixed(NODE_NS), Fixed(NODE_NS)

    def forward(self, x):
        parts = [self.first, self.last]
        parts.insert(self.place, spiky)
        for part in parts:
            x = part(x)
        return x


class SpikyLeaf(torch.nn.Module):
    """A leaf module (one call_module node) spinning as `spiky` does, with its own count."""

    def __init__(self, period: int):
        super().__init__()
        self.period, self.calls = period, 0

    def forward(self, x):
        self.calls += 1
        _C._spin_ns(SPIKE_NS if self.calls % self.period == 0 else CALM_NS)
        return x


def _leaf_model(place: int, period: int) -> torch.nn.Module:
    parts = [Fixed(NODE_NS), Fixed(NODE_NS)]
    parts.insert(place, SpikyLeaf(period))
    return torch.nn.Sequential(*parts)


def _spiky_node(prof) -> str:
    """The name of the node that spikes (the wrapped function's, or the spiky leaf's)."""
    for name, target, module in prof.nodes[["name", "target", "module_type"]].values:
        if "spiky" in str(target) or module == "SpikyLeaf":
            return name
    raise AssertionError(f"no spiky node in {prof.nodes['name'].tolist()}")


# every place of the spiky node, spikes from every 2nd to every 10th call, in a wrapped
# function and in a leaf module (periods <= 10: at least 10% of 60 runs spike, so the runs
# at or above the 0.9 quantile are spikes)
CASES = [(kind, place, period) for kind, place, period in itertools.product(
    ("function", "leaf"), (0, 1, 2), (2, 3, 7, 10)) if (place + period) % 2 == 0 or
    (kind, period) == ("function", 10)]


@pytest.mark.parametrize("kind,place,period", CASES)
def test_tail_names_the_node_that_spikes(kind, place, period):
    """A node that spins 5 ms on one call in `period` between two 300 µs nodes: tail(0.9)
    names it with a share >= 0.9, never the outside row (which, computed from another
    invocation than the runs, took the spikes of the plain calls: share 0.99997)."""
    _SPIKY.update(period=period, calls=0)
    model = SpikyFunction(place) if kind == "function" else _leaf_model(place, period)
    prof = pyfxprof.profile(model, (torch.zeros(2, 4),), runs=60, warmup=2, progress=False,
                            leaf_modules=(Fixed, SpikyLeaf))
    assert prof.meta["call"]["per_run"] is True
    tail = prof.tail(0.9)
    top = tail.iloc[0]
    assert top["name"] == _spiky_node(prof) and top["share"] >= 0.9, tail.to_string()
    if OUTSIDE_GRAPH in tail["name"].tolist():
        assert tail.set_index("name").loc[OUTSIDE_GRAPH, "share"] < 0.1


def _runs_inside_calls(model, inputs, runs=20, leaves=()):
    """(each run's call wall ns, each run's rows summed) of `runs` runs made inside the
    user's call (timed_runs with a UserCall), and the timings."""
    prepared = prepare(model, inputs, "auto", (leaves, (), None))
    executor = executor_for(model, prepared, "codegen", False)
    call = UserCall(model, inputs, "cpu", (prepared.captured.graph_module, prepared.args))
    with executor:
        timings, *_ = timed_runs(executor, prepared.args, runs, 2, False, prepared.frame, call)
    return np.asarray(call.around.walls_ns), timings.intervals.sum(axis=1), call


def test_the_nodes_of_a_run_fit_inside_its_own_call():
    """Every run's call holds that run's nodes (the call is the same invocation, the timers'
    cost in it, subtracted from the nodes): never shorter than their sum, spikes included
    (a spike in another invocation's call would leave some call shorter than its run)."""
    _SPIKY.update(period=3, calls=0)
    walls, rows, call = _runs_inside_calls(SpikyFunction(1), (torch.zeros(2, 4),),
                                           leaves=(Fixed,))
    assert call.around.failure is None and len(walls) == len(rows) == 20
    assert (walls >= rows).all(), (walls - rows).tolist()
    spikes = rows > 2 * NODE_NS + SPIKE_NS // 2
    assert spikes.sum() in (6, 7) and (walls[spikes] > SPIKE_NS).all()


def test_latency_analyses_of_an_eager_transformer_stay_within_one_invocation():
    """Tiny GPT-2 (eager, captured as graphs): each run's nodes fit inside its own call
    (within 2 µs of timer noise), the profile's run total is its rows plus its outside row
    exactly, and the outside row's per-run spread is the calls' (not the plain calls')."""
    from tests.tiny_transformers import tiny_gpt2
    model, ids = tiny_gpt2(), torch.randint(0, 100, (1, 16))
    walls, rows, call = _runs_inside_calls(model, (ids,))
    assert call.around.failure is None
    assert (walls - rows >= -2_000).all(), (walls - rows).tolist()
    prof = pyfxprof.profile(model, (ids,), runs=20, warmup=2, progress=False)
    assert prof.meta["call"]["per_run"] is True and "not_per_run" not in prof.meta["call"]
    column = outside_column(prof)
    in_run = (prof.nodes["op"] != "range").to_numpy()
    assert (prof.run_totals == prof.samples[:, in_run].sum(axis=1)).all()
    if column is not None:
        assert (prof.samples[:, column] >= 0).all()
        latency, tail = prof.latency(), prof.tail(0.9)
        assert latency.n == 20 and tail["share"].sum() == pytest.approx(1.0)


class OwnCall(torch.nn.Module):
    """A model whose own __call__ never reaches forward: no call can be made around a run."""

    def __init__(self):
        super().__init__()
        self.first = Fixed(NODE_NS)

    def forward(self, x):
        return self.first(x)

    def __call__(self, x):
        return self.first(x) + 0


def test_a_call_that_cannot_hold_the_run_keeps_the_row_out_of_per_run_figures():
    """The outside row is then one figure in every run (no run's figure from another
    invocation): the tail is the graph's, and the header says why."""
    prof = pyfxprof.profile(OwnCall(), (torch.zeros(2, 4),), runs=12, warmup=1,
                            progress=False, leaf_modules=(Fixed,))
    call = prof.meta["call"]
    assert call["per_run"] is False
    assert call["not_per_run"] == "your model's call does not reach its forward"
    column = outside_column(prof)
    if column is not None:
        assert len(set(prof.samples[:, column].tolist())) == 1
        assert prof.tail(0.9).set_index("name").loc[OUTSIDE_GRAPH, "excess"] == 0
    header = prof.table().splitlines()
    assert any(line.startswith("per run: your model's call does not reach its forward")
               for line in header)


@pytest.mark.parametrize("period", [2, 3, 7, 10])
def test_tail_names_the_outside_row_when_the_python_around_the_graph_spikes(period):
    """A forward pre-hook (Python outside the graph) spins 5 ms on one call in `period`: the
    run whose own call spiked carries it in its outside row, and tail(0.9) names that row,
    however the spikes fall on the plain calls and the calls paired with them (which set
    the row's level, one figure for all runs)."""
    model = torch.nn.Sequential(Fixed(NODE_NS), Fixed(NODE_NS))
    calls = [0]

    def hook(module, args):
        calls[0] += 1
        _C._spin_ns(SPIKE_NS if calls[0] % period == 0 else CALM_NS)

    model.register_forward_pre_hook(hook)
    prof = pyfxprof.profile(model, (torch.zeros(2, 4),), runs=60, warmup=2, progress=False,
                            leaf_modules=(Fixed,))
    top = prof.tail(0.9).iloc[0]
    assert prof.meta["call"]["per_run"] is True
    assert top["name"] == OUTSIDE_GRAPH and top["share"] >= 0.9, prof.tail(0.9).to_string()
