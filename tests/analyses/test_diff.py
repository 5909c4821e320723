import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyfxprof.analyses.diff import ProfileDiff, diff, distinct_labels, load_input
from pyfxprof.errors import PyfxprofError
from pyfxprof.data.persist import save_profile
from pyfxprof.data.profile import Profile

RUNS = 20
SLOW = "layer1.0.conv1/layer1_0_conv1"
NOISY = "head.fc/head_fc"


def make_nodes(rows):
    """rows: (name, op, module_path, module_type) per node, in execution order."""
    return pd.DataFrame({
        "index": range(len(rows)), "name": [r[0] for r in rows], "op": [r[1] for r in rows],
        "target": [r[2] or r[0] for r in rows], "module_path": [r[2] for r in rows],
        "module_type": [r[3] for r in rows],
        "module_stack": [tuple(r[2].split(".")) if r[2] else () for r in rows],
    })


def make_profile(rows, medians, rng, runs=RUNS, meta=None, noise=None, steady=0.01):
    """Per-run samples around ``medians`` (ns): `steady` lognormal noise (1%), or ``noise[i]``
    for node i."""
    sigma = np.array([steady if noise is None else noise.get(i, steady)
                      for i in range(len(rows))])
    samples = (np.array(medians) * rng.lognormal(0.0, sigma, (runs, len(rows)))).astype(np.int64)
    return Profile(make_nodes(rows), samples, samples.sum(axis=1) + 5_000,
                   meta or {"model": "toynet"})


CONTROL_ROWS = [("conv1", "call_module", "conv1", "Conv2d"),
                ("bn1", "call_module", "bn1", "BatchNorm2d"),
                ("relu", "call_function", "", "Net"),
                ("layer1_0_conv1", "call_module", "layer1.0.conv1", "Conv2d"),
                ("layer1_0_relu", "call_function", "layer1.0", "BasicBlock"),
                ("head_fc", "call_module", "head.fc", "Linear"),
                ("old_pool", "call_function", "", "Net")]
TEST_ROWS = [("conv1", "call_module", "conv1", "Conv2d"),
             ("relu", "call_function", "", "Net"),
             ("layer1_0_conv1", "call_module", "layer1.0.conv1", "Conv2d"),
             ("layer1_0_relu", "call_function", "layer1.0", "BasicBlock"),
             ("head_fc", "call_module", "head.fc", "Linear"),
             ("new_pool", "call_function", "", "Net")]


def control_and_test(runs=RUNS, fused=True, seed=9, steady=0.01):
    """conv1+bn1 fused in test, layer1.0.conv1 2x slower, head.fc noisy (30%) but unchanged,
    old_pool removed, new_pool added; the other rows jitter by `steady` run to run."""
    rng = np.random.default_rng(seed)
    control = make_profile(CONTROL_ROWS, [400e3, 100e3, 50e3, 300e3, 20e3, 300e3, 30e3], rng,
                           runs, noise={5: 0.3}, steady=steady)
    meta = {"model": "toynet", "fused_pairs": [["conv1", "bn1"]] if fused else []}
    test = make_profile(TEST_ROWS, [400e3, 50e3, 600e3, 20e3, 300e3, 40e3], rng, runs, meta,
                        noise={4: 0.3}, steady=steady)
    return control, test


@pytest.fixture(scope="module")
def result():
    """60 runs a side, the steady rows jittering 0.8% run to run: the unchanged rows'
    intervals, at the level the FDR selection leaves (99% for 1 of 5 rows: 4.6 times their
    noise, at least their run-to-run dispersion, with 4 degrees of freedom), fit inside the
    margin (at 1%, just not)."""
    return diff(*control_and_test(runs=60, steady=0.008))


def test_known_changes_are_categorised(result):
    df = result.changes()
    assert df["change"].to_dict() == {
        "conv1/conv1": "=", "bn1/bn1": "fused", "relu": "=", SLOW: "+",
        "layer1.0/layer1_0_relu": "=", NOISY: "?", "old_pool": "removed", "new_pool": "added"}
    assert df.loc[SLOW, "rel_change"] == pytest.approx(1.0, abs=0.05)
    assert df.loc[SLOW, "p_value"] < 1e-6
    assert df.loc["bn1/bn1", "fused_into"] == "conv1"
    assert (df.drop("bn1/bn1")["fused_into"] == "").all()


def test_noisy_node_is_unresolved_despite_a_large_relative_change():
    result = diff(*control_and_test())  # 20 runs a side
    row = result.changes().loc[NOISY]
    assert abs(row["rel_change"]) >= result.min_change  # noise alone moved the median > 5%
    assert row["q_value"] > result.alpha
    assert row["ci_low"] < -result.min_change and row["ci_high"] > result.min_change
    assert row["change"] == "?"
    assert NOISY in result.ops_diff()["unresolved"]


def test_ops_diff_has_tracediffs_categories(result):
    assert result.ops_diff() == {
        "added": ["new_pool"], "deleted": ["old_pool"], "increased": [SLOW], "decreased": [],
        "unchanged": ["conv1/conv1", "relu", "layer1.0/layer1_0_relu"], "unresolved": [NOISY],
        "fused": ["bn1/bn1"]}


def test_bn_without_fused_pairs_is_removed():
    df = diff(*control_and_test(fused=False)).changes()
    assert df.loc["bn1/bn1", "change"] == "removed"
    assert df.loc["bn1/bn1", "fused_into"] == ""


def test_added_and_removed_rows_count_zero_on_the_missing_side(result):
    df = result.changes()
    added, removed = df.loc["new_pool"], df.loc["old_pool"]
    assert (added["counts_control"], added["median_control"], added["total_control"]) == (0, 0, 0)
    assert added["diff_duration"] == added["median_test"] > 0
    assert np.isnan(added["rel_change"]) and np.isnan(added["p_value"])
    assert removed["counts_test"] == 0 and removed["rel_change"] == -1.0
    assert list(df.index[-1:]) == ["new_pool"]  # control keys first, then added ones


# Hand-computed: 5 runs; conv 1000/1100/900/1000/1050 -> 2000/2100/1900/2000/2050 ns.
# Two common rows: too few to measure the noise between sessions, so the within-session
# errors alone: log-median MADs 0.04879 (log 1050/1000) and 0.02469 (log 2050/2000), standard
# errors 1.2533 * 1.4826 * MAD / sqrt(5) = 0.04055 and 0.02052, combined 0.04544;
# z = log 2 / 0.04544 = 15.25. Totals (+100 ns each run): control median 1800, test 2900 ns.
CONTROL_SAMPLES = np.array([[1000, 500, 200], [1100, 500, 200], [900, 500, 200],
                            [1000, 500, 200], [1050, 500, 200]])
TEST_SAMPLES = CONTROL_SAMPLES * [2, 1, 0] + [0, 0, 300]
TEST_SAMPLES[:, 0] = [2000, 2100, 1900, 2000, 2050]


def small_pair():
    rows_c = [("conv", "call_module", "conv", "Conv2d"), ("relu", "call_function", "", "Net"),
              ("old", "call_function", "", "Net")]
    rows_t = rows_c[:2] + [("new", "call_function", "", "Net")]
    control = Profile(make_nodes(rows_c), CONTROL_SAMPLES, CONTROL_SAMPLES.sum(axis=1) + 100,
                      {"model": "net"})
    test = Profile(make_nodes(rows_t), TEST_SAMPLES, TEST_SAMPLES.sum(axis=1) + 100,
                   {"model": "net"})
    return control, test


def test_hand_computed_values():
    df = diff(*small_pair()).changes()
    conv = df.loc["conv/conv"]
    assert (conv["total_control"], conv["median_control"]) == (5050.0, 1000.0)
    assert (conv["total_test"], conv["median_test"]) == (10050.0, 2000.0)
    assert conv["diff_duration"] == 1000.0 and conv["rel_change"] == pytest.approx(1.0)
    assert conv["pct_control"] == pytest.approx(1000 / 1800 * 100)
    se = 1.2533 * 1.4826 / math.sqrt(5) * math.hypot(math.log(1.05), math.log(2050 / 2000))
    assert conv["p_value"] == pytest.approx(math.erfc(math.log(2) / se / math.sqrt(2)), rel=1e-3)
    # 1 of the 2 rows tested selected: the interval at 1 - 0.05 * 1 / 2 = 97.5%
    assert conv["ci_low"] == pytest.approx(math.expm1(math.log(2) - 2.24140 * se), rel=1e-4)
    assert df.loc["relu", "p_value"] == 1.0  # identical samples on both sides
    assert df.loc["relu", "change"] == "="
    assert list(df.columns) == [
        "name", "op", "target", "module_path", "module_type",
        "counts_control", "total_control", "median_control", "pct_control",
        "counts_test", "total_test", "median_test", "diff_counts", "diff_duration",
        "rel_change", "p_value", "q_value", "ci_low", "ci_high", "change", "fused_into"]


def test_totals_compare_run_totals():
    totals = diff(*small_pair()).totals()
    assert (totals["median_control"], totals["median_test"]) == (1800.0, 2900.0)
    assert totals["rel_change"] == pytest.approx(11 / 18)
    assert totals["change"] == "+"


def test_identical_labels_are_made_distinct():
    result = diff(*small_pair(), labels=("run", "run"))
    assert result.labels == ("run", "run (2)")
    assert result.changes().attrs["labels"] == ("run", "run (2)")
    assert "run median  run (2) median" in result.table()
    assert distinct_labels(["a", "b"]) == ("a", "b")
    with pytest.raises(ValueError, match="two strings"):
        distinct_labels("ab")


def test_group_by_op_sums_nodes(result):
    df = result.changes(by="op")
    assert list(df.index) == ["call_module", "call_function"]
    expected = result.control.samples[:, [0, 1, 3, 5]].sum(axis=1)
    assert df.loc["call_module", "median_control"] == np.median(expected)
    assert df.loc["call_module", "counts_control"] == 4
    assert df.loc["call_module", "counts_test"] == 3
    assert df.loc["call_module", "diff_counts"] == -1
    assert "name" not in df.columns and df.index.name == "op"


def test_group_by_module_at_depth(result):
    df = result.changes(by="module", depth=1)
    assert list(df.index) == ["conv1", "bn1", "", "layer1", "head"]
    assert df.loc["bn1", "change"] == "fused"
    assert df.loc["layer1", "change"] == "+"
    assert df.loc["", "counts_control"] == 2 and df.loc["", "counts_test"] == 2
    full = result.changes(by="module")
    assert "layer1.0.conv1" in full.index and "layer1.0" in full.index
    assert "Module" in result.table(by="module", depth=1).split("\n\n")[1]


def test_group_by_target_and_module_type(result):
    assert "head.fc" in result.changes(by="target").index
    assert result.changes(by="module_type").loc["BatchNorm2d", "change"] == "fused"


def test_bad_views_are_refused(result):
    with pytest.raises(ValueError, match="by must be one of"):
        result.changes(by="kernel")
    with pytest.raises(ValueError, match="depth applies to by='module' only"):
        result.changes(by="op", depth=2)
    with pytest.raises(ValueError, match="positive int"):
        result.changes(by="module", depth=0)


def test_p_value_is_nan_with_too_few_runs():
    few = diff(*control_and_test(runs=3))
    assert not few.testable
    df = few.changes()
    assert df["p_value"].isna().all()
    assert df.loc[SLOW, "change"] == "+"  # judged by the relative change alone
    assert "no p-values (need >= 5 runs per side)" in few.table()
    assert diff(*control_and_test(runs=3), min_runs=3).testable


def test_settings_are_checked():
    control, test = small_pair()
    for kwargs, message in (({"alpha": 1.5}, "alpha"), ({"min_change": -0.1}, "min_change"),
                            ({"min_runs": 1}, "min_runs")):
        with pytest.raises(ValueError, match=message):
            ProfileDiff(control, test, **kwargs)


def test_regressions(result):
    found = result.regressions(0.05)
    # one session per side: the total's +13.8% is one node's change, not the rows' common
    # shift (a drift between sessions would move them all): slower
    assert result.totals()["change"] == "+"
    assert [line.split(":")[0] for line in found] == ["total run time", f"node {SLOW}"]
    assert not any(NOISY in line for line in found)
    assert result.regressions(1.5) == []
    same = diff(*control_and_test()[:1] * 2)
    assert same.regressions(0.0) == []


def test_inputs_from_saved_profiles(tmp_path):
    control, test = small_pair()
    save_profile(control, tmp_path / "a.json")
    save_profile(test, tmp_path / "b.json.gz")
    from_files = diff(tmp_path / "a.json", str(tmp_path / "b.json.gz")).changes()
    pd.testing.assert_frame_equal(from_files, diff(control, test).changes())


def test_unreadable_inputs_are_refused(tmp_path):
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(PyfxprofError, match="expected a pyfxprof profile or a torch.profiler"):
        load_input(other)
    with pytest.raises(PyfxprofError, match="no such file"):
        diff(tmp_path / "missing.json", small_pair()[1])
    with pytest.raises(TypeError, match="a Profile or a path"):
        load_input(42)


def test_group_of_fused_bns_names_every_conv():
    rows = [("conv_a", "call_module", "a.conv", "Conv2d"), ("bn_a", "call_module", "a.bn",
            "BatchNorm2d"), ("conv_b", "call_module", "b.conv", "Conv2d"),
            ("bn_b", "call_module", "b.bn", "BatchNorm2d")]
    rng = np.random.default_rng(0)
    control = make_profile(rows, [100e3, 20e3, 100e3, 20e3], rng)
    meta = {"fused_pairs": [["a.conv", "a.bn"], ["b.conv", "b.bn"]]}
    test = make_profile(rows[::2], [100e3, 100e3], rng, meta=meta)
    result = diff(control, test)
    assert result.changes(by="module_type").loc["BatchNorm2d", "fused_into"] == "a.conv; b.conv"
    assert result.changes(by="module", depth=1).loc["a", "change"] == "-"  # conv + bn -> conv
    assert "a.conv (+1 more)" in result.table(by="module_type")


def test_diff_renders_as_html_in_notebooks():
    result = diff(*control_and_test(), labels=("main", "pr"))
    page = result._repr_html_()
    assert page.startswith('<div class="pyfxprof">') and "<style>" in page
    assert "<th" in page and "main median" in page and "pr median" in page
    assert "pyfxprof diff — main" in page
    assert page.count("<tr>") == 1 + min(20, len(result.changes()))


def test_the_outside_row_is_diffed_like_a_node():
    from tests.outside_profiles import outside_profile
    frame = diff(outside_profile(outside_ns=3000), outside_profile(outside_ns=6000)).changes()
    row = frame[frame["name"] == "(Python outside the graph)"].iloc[0]
    assert row["diff_duration"] == pytest.approx(3000, rel=0.05)


@pytest.mark.parametrize("view", [{}, {"by": "op"}, {"by": "module", "depth": 1}])
def test_compare_is_a_deprecated_alias_of_changes(result, view):
    with pytest.warns(DeprecationWarning, match=r"ProfileDiff\.compare\(\) is deprecated.*"
                                                r"use ProfileDiff\.changes\(\)$"):
        old = result.compare(**view)
    pd.testing.assert_frame_equal(old, result.changes(**view))


@settings(max_examples=20, deadline=None)
@given(share=st.floats(0.0, 2.0), outside_on=st.sampled_from(["control", "test", "both"]),
       seed=st.integers(0, 1000))
def test_totals_compare_one_kind_whichever_side_resolved_the_outside_row(share, outside_on,
                                                                         seed):
    """The run totals of a side with a resolved (Python outside the graph) row are the
    user's call, of one without the graph's rows: where one side alone has it, both are
    compared as graphs, so the total's change is the graphs' whatever the row's size."""
    from pyfxprof.data.outside_graph import OUTSIDE_GRAPH, with_outside_graph
    rng = np.random.default_rng(seed)
    control, test = control_and_test(seed=seed)
    graphs = diff(control, test).totals()["rel_change"]
    rows = [(control.samples.sum(axis=1) * (1 + share)).astype(int),
            (test.samples.sum(axis=1) * (1 + share)).astype(int)]
    sides = [with_outside_graph(prof, calls + 1000, around_ns=calls + 1000)
             if outside_on in (name, "both") else prof
             for prof, calls, name in zip((control, test), rows, ("control", "test"))]
    found = diff(*sides)
    assert found.outside_dropped == (None if outside_on == "both" else outside_on)
    if outside_on != "both":
        summed = [prof.samples.sum(axis=1) for prof in (control, test)]
        expected = np.median(summed[1]) / np.median(summed[0]) - 1
        assert found.totals()["rel_change"] == pytest.approx(expected, abs=1e-3)
        assert OUTSIDE_GRAPH not in found.changes().index
    assert abs(found.totals()["rel_change"] - graphs) < 0.05 + (share if outside_on == "both"
                                                                 else 0.0)


@settings(max_examples=20, deadline=None)
@given(shares=st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)),
       outside_on=st.sampled_from(["control", "test", "both", "neither"]),
       seed=st.integers(0, 1000))
def test_graph_totals_are_the_nodes_summed_whatever_the_outside_row_did(shares, outside_on,
                                                                       seed):
    """graph_totals(): the totals of the graph alone (each run's nodes summed) where a side's
    run totals are the user's call, whatever its outside row's size on either side (the
    user's call less the nodes of another call); None where both totals already are the
    graph's. It is the diff of the graphs alone, and regressions() gates it."""
    from pyfxprof.data.outside_graph import with_outside_graph
    control, test = control_and_test(seed=seed)
    graphs = diff(control, test)
    sides = [with_outside_graph(prof, calls, around_ns=calls) if outside_on in (name, "both")
             else prof for prof, name, calls in zip(
                 (control, test), ("control", "test"),
                 ((prof.samples.sum(axis=1) * (1 + share)).astype(int) + 1000
                  for prof, share in zip((control, test), shares)))]
    found = diff(*sides)
    if outside_on == "neither" or found.outside_dropped is not None:
        assert found.graph_totals() is None
        return
    graph = found.graph_totals()
    summed = [np.median(prof.samples.sum(axis=1)) for prof in (control, test)]
    assert graph["rel_change"] == pytest.approx(summed[1] / summed[0] - 1, abs=1e-3)
    assert graph["change"] == graphs.totals()["change"]   # the graphs' own diff (+5 us a run)
    assert graph["rel_change"] == pytest.approx(graphs.totals()["rel_change"], abs=0.01)
    lines = found.regressions(0.05)
    assert any(line.startswith("graph total") for line in lines) == (graph["change"] == "+"
                                                                     and graph["rel_change"]
                                                                     >= 0.05)
