"""Tail attribution and the variance view (data/tail.py), on hand-computed data and on a model
whose slow node is known."""

import numpy as np
import pytest

import pyfxprof
from pyfxprof.data.tail import BETWEEN_NODES, tail_attribution, tail_runs, variance_shares
from tests.latency_models import LEAVES, Fixed, SlowCalls, batch, chain


def test_shares_add_up_to_one_with_the_between_nodes_row():
    rng = np.random.default_rng(0)
    samples = rng.integers(1000, 2000, size=(50, 4))
    totals = samples.sum(axis=1) + rng.integers(0, 300, size=50)
    frame = tail_attribution(list("abcd"), samples, totals, 0.9)
    assert BETWEEN_NODES in frame["name"].tolist() and len(frame) == 5
    assert frame["share"].sum() == pytest.approx(1.0)
    assert frame["var_share"].sum() == pytest.approx(1.0)
    assert frame["excess"].is_monotonic_decreasing
    assert frame.attrs == {"quantile": 0.9, "tail_runs": 5, "runs": 50}


def test_variance_view_finds_a_rare_but_bad_node_with_a_small_median():
    rare = np.zeros(100, dtype=np.int64)
    rare[[7, 42]] = 50_000                      # median 0, twice 50 µs
    steady = np.random.default_rng(2).integers(99_000, 101_000, size=100)
    samples = np.column_stack([steady, rare])
    frame = tail_attribution(["steady", "rare"], samples, samples.sum(axis=1), 0.5,
                             sort_by="var_share")
    assert frame["name"][0] == "rare" and frame["var_share"][0] > 0.8
    assert frame.set_index("name").at["rare", "median"] == 0


def test_tail_runs_and_bad_quantiles():
    assert tail_runs([3, 1, 2], 0.5).tolist() == [True, False, True]
    for q in (0, 1, 1.5):
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            tail_runs([1, 2], q)
    with pytest.raises(ValueError, match="sort_by"):
        tail_attribution(["a"], np.ones((2, 1)), np.ones(2), 0.9, sort_by="median")
    assert np.isnan(variance_shares(np.ones((3, 2)))).all()


def _quiet_runs_and_slow_run(prof, slow_run: int):
    """``prof`` without the runs another process preempted (tails made by the machine, not the
    model) except ``slow_run``, which preemption only lengthens; and whether it was preempted."""
    if prof.run_noise is None:
        return prof, False
    preempted = prof.noise()["preempted"].to_numpy()
    keep = ~preempted
    keep[slow_run] = True
    return prof.select_runs(keep), bool(preempted[slow_run])


@pytest.mark.timing
def test_a_node_5ms_slower_in_one_run_of_ten_gets_the_tail():
    """Truth: the 6th call of the middle node (timed run 5; call 1 is the analysis run) spins
    5 ms more. Runs another process preempted are left out: the slow run must be the tail of
    the runs the machine left alone."""
    model = chain(Fixed(200_000), SlowCalls(100_000, 5_000_000, {6}), Fixed(50_000))
    prof = pyfxprof.profile(model, batch(1), runs=10, warmup=0, progress=False,
                            leaf_modules=LEAVES)
    prof, slow_run_preempted = _quiet_runs_and_slow_run(prof, 4)
    assert prof.n_runs >= 4, f"{10 - prof.n_runs} of 9 steady runs preempted: no median left"
    frame = prof.tail(0.9).set_index("name")
    slow = prof.nodes["name"][1]
    assert frame.attrs["tail_runs"] == 1
    assert frame.at[slow, "share"] >= 0.9
    assert frame.at[slow, "excess"] >= 4_500_000
    if not slow_run_preempted:
        assert frame.at[slow, "excess"] <= 5_500_000
    assert frame["var_share"].idxmax() == slow
