"""The (Python outside the graph) row: the interval, the row, coverage of the call, the
breakdown's scaling, the tree and persistence (old files too)."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyfxprof
from pyfxprof.data import persist
from pyfxprof.data.outside_graph import (OUTSIDE_GRAPH, call_level, call_meta, call_share, outside_column,
                                         python_functions, tree_rows, with_compiled_call,
                                         with_outside_graph)
from pyfxprof.stats import columns
from pyfxprof.stats.order_statistics import runs_needed
from tests.outside_profiles import FUNCTIONS, graph_profile, outside_profile


def test_the_interval_is_the_order_statistics_or_the_range_with_too_few_runs():
    # n = 20: P(X <= 5) = 0.021 <= 0.025 < P(X <= 6): the 6th and 15th differences
    meta = call_meta(list(range(101, 121)), [100] * 20)
    assert (meta["outside_low_ns"], meta["outside_high_ns"]) == (6.0, 15.0)
    few = call_meta([103, 101, 102, 105, 104], [100] * 5)  # too few for 95%: min and max
    assert (few["outside_low_ns"], few["outside_high_ns"], few["resolved"]) == (1.0, 5.0, False)


def test_call_meta_is_resolved_only_when_the_interval_is_above_zero():
    above = call_meta([310, 290] * 5, [100] * 10, around_ns=[310, 290] * 5)
    assert (above["outside_median_ns"], above["resolved"]) == (200.0, True)
    noise = call_meta([120, 80] * 5, [100] * 10)
    assert noise["per_run"] is False
    assert noise["resolved"] is False and noise["outside_low_ns"] < 0 < noise["outside_high_ns"]


def test_the_row_makes_the_totals_the_users_call_and_coverage_a_share_of_it():
    prof = outside_profile()
    names = prof.nodes["name"].tolist()
    assert names == ["mm", "relu", OUTSIDE_GRAPH]
    assert prof.samples[:, 2].tolist() == [2950, 3050] * 5
    assert prof.run_totals.tolist() == [3850, 3950] * 5  # the user's calls
    assert prof.meta["graph_coverage"] == 0.9
    assert prof.meta["coverage"] == pytest.approx(900 / 3900, rel=0.02)
    assert call_share(prof) == pytest.approx(3000 / 3900)
    # extra columns get blanks of their own type; the row is not a model node
    row = prof.nodes.iloc[2]
    assert (row["flops"], row["source"], row["module_stack"]) == (0, "", ())
    assert prof.nodes["flops"].dtype == np.int64
    # the rows sum to the call (the graph's 100 ns between its nodes are in the row): Total %
    # is a share of it
    df = prof.to_dataframe()
    assert df["median"].sum() == pytest.approx(np.median(prof.run_totals))
    assert prof.meta["call"]["rows_share"] == pytest.approx(1.0)
    assert df.loc[2, "pct_total"] == pytest.approx(3000 / 3900 * 100, rel=0.01)


def test_noise_gives_no_row_and_the_meta_says_so():
    graph = graph_profile()
    prof = with_outside_graph(graph, [940, 860] * 5, FUNCTIONS)  # the rows' 900 ns ± 40
    assert outside_column(prof) is None and prof.n_nodes == 2
    assert prof.meta["call"]["resolved"] is False
    assert prof.meta["call"]["rows_share"] == pytest.approx(900 / 900)
    assert "rows sum to 100.0% of your call" in prof.table().splitlines()[1]
    assert (prof.run_totals == graph.run_totals).all() and prof.meta["coverage"] == 0.9
    assert "below the noise" in prof.table().splitlines()[1]
    assert python_functions(prof).empty and call_share(prof) is None


def test_device_and_backward_samples_get_an_empty_column():
    graph = graph_profile(6)
    graph = pyfxprof.Profile(graph.nodes, graph.samples, graph.run_totals, graph.meta,
                             device_samples=graph.samples, backward_samples=graph.samples)
    prof = with_outside_graph(graph, [5000] * 6)
    assert prof.device_samples[:, 2].tolist() == [0] * 6
    assert prof.backward_samples[:, 2].tolist() == [0] * 6


def test_functions_share_the_rows_median_by_profiled_self_time():
    functions = python_functions(outside_profile())
    assert functions["function"].tolist() == ["Net.forward", "Module._call_impl",
                                              "torch._C._get_tracing_state"]
    assert functions["share"].tolist() == pytest.approx([0.6, 0.3, 0.1])
    assert functions["self_ns"].sum() == pytest.approx(3000.0)  # the row's median
    assert len(python_functions(outside_profile(), top=2)) == 2


def test_the_tree_has_the_row_under_the_root_with_its_functions():
    text = outside_profile().tree()
    lines = text.splitlines()
    assert lines[0].startswith("Net")
    assert lines[1].startswith("└─ (Python outside the graph)") and "3.00 µs" in lines[1]
    assert lines[2].startswith("   ├─ Net.forward [model] ×1") and "1.80 µs" in lines[2]
    assert lines[-1].startswith("   └─ torch._C._get_tracing_state")
    assert [label for label, _ in tree_rows(graph_profile())] == []


def test_saved_profiles_keep_the_row_and_the_call(tmp_path):
    prof = outside_profile()
    prof.save(tmp_path / "p.json")
    loaded = pyfxprof.load(tmp_path / "p.json")
    assert loaded == prof
    assert loaded.meta["coverage"] == pytest.approx(prof.meta["coverage"])
    assert python_functions(loaded)["self_ns"].tolist() == pytest.approx(
        python_functions(prof)["self_ns"].tolist())


def test_a_version_2_file_without_the_row_still_loads(tmp_path):
    document = persist.to_document(graph_profile())
    document["version"] = 2
    loaded = persist.from_document(document)
    assert loaded == graph_profile() and "call" not in loaded.meta
    assert "your call" not in loaded.table().splitlines()[1]


def test_too_few_paired_runs_never_resolve_the_row():
    # 5 differences all far above zero: their range is only a 93.75% interval, so no row
    few = call_meta([900] * 5, [100] * 5)
    enough = call_meta([900] * runs_needed(0.5), [100] * runs_needed(0.5))
    assert runs_needed(0.5) == 6 and not few["resolved"] and enough["resolved"]


@settings(max_examples=60, deadline=None)
@given(runs=st.integers(6, 60), spike_every=st.integers(3, 9), level=st.integers(-500, 5000),
       node=st.integers(0, 1), seed=st.integers(0, 2**31))
def test_each_runs_row_and_total_come_from_its_own_call(runs, spike_every, level, node,
                                                        seed):
    """Runs made inside calls: whatever spikes a node (in its own run) or the plain calls
    (other invocations), a run's total is its rows plus its row, the row's per-run spread is
    its own call's beyond its rows, and a node's spike never moves to the row."""
    rng = np.random.default_rng(seed)
    graph = graph_profile(runs)
    samples = graph.samples + rng.integers(0, 20, size=graph.samples.shape)
    spikes = np.arange(runs) % spike_every == 0
    samples[spikes, node] += 1_000_000
    graph = pyfxprof.Profile(graph.nodes, samples, samples.sum(axis=1) + 100, graph.meta)
    around = samples.sum(axis=1) + 3000 + rng.integers(-40, 40, size=runs)
    plain = around[::-1] + level + np.where(spikes[::-1], 2_000_000, 0)  # spikes elsewhere
    prof = with_outside_graph(graph, plain.tolist(), around_ns=around.tolist())
    column = outside_column(prof)
    assert column is not None and prof.meta["call"]["per_run"] is True
    rows = samples.sum(axis=1)
    assert (prof.run_totals == rows + prof.samples[:, column]).all()
    own = around - rows  # each run's own call beyond its rows
    shift = prof.samples[:, column] - own
    assert np.ptp(shift[prof.samples[:, column] > 0]) <= 1  # one level, rounding aside
    tail = prof.tail(0.9).set_index("name")
    assert tail.loc[["mm", "relu"][node], "share"] > 0.99


def test_runs_that_do_not_match_the_calls_around_them_are_not_per_run():
    prof = with_outside_graph(graph_profile(10), [5000] * 10, around_ns=[4000] * 9)
    assert prof.meta["call"]["not_per_run"] == "9 calls around 10 runs"
    assert prof.meta["call"]["per_run"] is False
    assert set(prof.samples[:, outside_column(prof)].tolist()) == {5000 - 900}


def _compiled_runs(kernels: np.ndarray, totals: np.ndarray) -> pyfxprof.Profile:
    """A compiled profile: kernel columns, then `(outside kernels)` (total minus kernels)."""
    names = [f"k{i}" for i in range(kernels.shape[1])] + ["(outside kernels)"]
    nodes = pd.DataFrame({"index": range(len(names)), "name": names,
                          "op": ["fused_kernel"] * kernels.shape[1] + ["outside_kernels"],
                          "target": "", "module_path": "", "module_type": "M",
                          "module_stack": [()] * len(names)})
    samples = np.column_stack([kernels, totals - kernels.sum(axis=1)])
    return pyfxprof.Profile(nodes, samples, totals, {"coverage": 0.5})


@settings(max_examples=40, deadline=None)
@given(runs=st.integers(6, 40), kernels=st.integers(1, 5), level=st.integers(-2000, 20000),
       seed=st.integers(0, 2**31))
def test_a_compiled_profiles_rows_sum_to_each_runs_own_compiled_call(runs, kernels, level,
                                                                    seed):
    """with_compiled_call: the outside row takes each run's own call beyond the run (the
    plain calls, other invocations, only in meta["call"]), so the rows sum to each run's own
    call, per run, whatever the plain calls' level; no new row."""
    rng = np.random.default_rng(seed)
    work = rng.integers(1000, 5000, size=(runs, kernels))
    totals = work.sum(axis=1) + rng.integers(3000, 4000, size=runs)
    around = totals + 500 + rng.integers(0, 50, size=runs)  # the user's call around the run
    plain = np.sort(around)[::-1] + level
    prof = with_compiled_call(_compiled_runs(work, totals), plain.tolist(), around.tolist())
    call = prof.meta["call"]
    assert call["compiled"] and call["per_run"] and prof.n_nodes == kernels + 1
    assert (prof.samples.sum(axis=1) == prof.run_totals).all()
    assert (prof.samples[:, :-1] == work).all()
    assert (prof.run_totals == around).all()
    assert call["level_ns"] == np.median(plain) - np.median(around)
    assert "your compiled call" in prof.table().splitlines()[1]


@pytest.mark.parametrize("runs, nodes", [(2000, 1000), (500, 4000), (8000, 250)])
@pytest.mark.parametrize("resolved", [True, False])
@pytest.mark.parametrize("reserved", [True, False])
def test_the_row_costs_no_copy_of_the_samples_but_where_no_room_was_reserved(
        runs, nodes, resolved, reserved):
    """The samples are written once (a profile's memory is known before it runs): the row
    goes into the column the run table reserved beside them (`spare`), or, without one, into
    the one array that holds both; no other copy of them: its medians copy one block of
    columns at a time, its per-run figures are vectors. Measured with tracemalloc (numpy's
    arrays are traced) against the samples' own bytes; the samples are made before it starts."""
    rng = np.random.default_rng(runs + nodes)
    names = [f"n{k}" for k in range(nodes)]
    frame = pd.DataFrame({"index": range(nodes), "name": names, "op": ["call_function"] * nodes,
                          "target": names, "module_path": "", "module_type": "Net",
                          "module_stack": [()] * nodes})
    spare = rng.integers(90, 110, size=(runs, nodes + 1), dtype=np.int64)
    samples = spare[:, :nodes] if reserved else np.ascontiguousarray(spare[:, :nodes])
    graph = pyfxprof.Profile(frame, samples, samples.sum(axis=1), {"coverage": 1.0})
    expected = samples.copy()
    rows = samples.sum(axis=1)
    calls = (rows + (10 * nodes if resolved else 0)).tolist()
    tracemalloc.start()
    try:
        prof = with_outside_graph(graph, calls, around_ns=calls,
                                  spare=spare if reserved else None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (prof.n_nodes == nodes + 1) is resolved
    assert np.array_equal(prof.samples[:, :nodes], expected)
    if resolved:
        assert np.array_equal(prof.samples[:, nodes], np.full(runs, 10 * nodes))
    widened = runs * (nodes + 1) * 8 if resolved and not reserved else 0
    vectors = 32 * runs * 8 + 64 * nodes * 8  # per-run figures, per-node medians and frame
    assert peak <= widened + columns.BLOCK_BYTES + vectors, (
        f"peak {peak / samples.nbytes:.2f}x the samples")


@pytest.mark.parametrize("resolved", [True, False])
def test_a_profile_on_reserved_room_saves_and_loads_its_own_columns(resolved, tmp_path):
    """Without the row the samples stay the room's first columns (a strided view)."""
    graph = graph_profile(10)
    spare = np.hstack([graph.samples, np.full((10, 1), -1, np.int64)])
    graph = pyfxprof.Profile(graph.nodes, spare[:, :2], graph.run_totals, graph.meta)
    calls = (graph.samples.sum(axis=1) + (5000 if resolved else 0)).tolist()
    prof = with_outside_graph(graph, calls, around_ns=calls, spare=spare)
    assert (prof.samples is spare) is resolved and (-1 not in prof.samples)
    prof.save(tmp_path / "p.json")
    assert np.array_equal(pyfxprof.load(tmp_path / "p.json").samples, prof.samples)


@settings(max_examples=60, deadline=None)
@given(level=st.integers(0, 50_000), around=st.integers(1_000, 10_000_000),
       stretches=st.lists(st.integers(0, 5_000_000), min_size=1, max_size=40))
def test_the_level_of_pairs_is_the_same_in_every_stretch_of_the_hosts_speed(level, around,
                                                                           stretches):
    # each pair (a plain call, a call around the graph) made in one stretch that adds its
    # own delay to both: the pairs' level is the plain calls' own excess, whatever the
    # stretches; the medians' difference is only when every stretch is the same
    paired = [around + delay for delay in stretches]
    plain = [value + level for value in paired]
    assert call_level(plain, [around] * 3, paired_ns=paired) == level
    assert call_level(plain, paired) == level  # the same calls, unpaired: medians alike
    assert call_meta(plain, [around] * 3, around_ns=[around] * 3,
                     paired_ns=paired)["level_ns"] == level
