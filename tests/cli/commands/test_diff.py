import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyfxprof.cli import main as cli
from pyfxprof.cli.commands import diff as diff_command
from pyfxprof.errors import PyfxprofError
from pyfxprof.data.persist import save_profile

from tests.analyses.test_diff import control_and_test


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Saved control and test profiles; the test has a node 2x slower (see test_diff)."""
    root = tmp_path_factory.mktemp("profiles")
    control, test = control_and_test()
    save_profile(control, root / "before.json")
    save_profile(test, root / "after.json.gz")
    return root / "before.json", root / "after.json.gz"


def run_diff(*argv):
    parser = argparse.ArgumentParser()
    diff_command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["diff"] + [str(a) for a in argv])
    return args.func(args)


def test_prints_the_table_with_file_name_labels(saved, capsys):
    assert run_diff(*saved, "--top", "3") == 0
    out = capsys.readouterr().out
    assert out.startswith("pyfxprof diff — before (toynet, 20 runs) vs after (toynet, 20 runs)")
    assert "… 5 more rows not shown (top=3)" in out


def test_gate_exits_1_on_a_significant_slowdown(saved, capsys):
    assert run_diff(*saved, "--fail-on-regression", "5%") == 1
    out = capsys.readouterr().out
    assert "REGRESSION: 2 significant slowdown(s) >= 5%:" in out
    assert "  node layer1.0.conv1/layer1_0_conv1: " in out
    # one session per side: the total's +13.8% is the slow node's, beyond the rows' drift
    assert "  total run time: " in out


def test_gate_exits_0_without_regression(saved, capsys):
    before, after = saved
    assert run_diff(before, before, "--fail-on-regression", "0.05") == 0
    assert "no significant slowdown >= 5%" in capsys.readouterr().out
    assert run_diff(after, before, "--fail-on-regression", "5%") == 0  # faster is fine
    assert run_diff(*saved, "--fail-on-regression", "150%") == 0


def test_group_by_and_labels(saved, capsys):
    assert run_diff(*saved, "--group-by", "module", "--depth", "1", "--labels", "x", "x") == 0
    out = capsys.readouterr().out
    assert "by module at depth 1" in out and "x median  x (2) median" in out


def test_plot_is_written(saved, tmp_path, capsys):
    path = tmp_path / "diff.png"
    assert run_diff(*saved, "--plot", path) == 0
    assert path.stat().st_size > 0
    assert f"wrote plot to {path}" in capsys.readouterr().out


def test_bad_input_exits_2(saved, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("diff",))
    assert cli.main(["diff", str(tmp_path / "missing.json"), str(saved[1])]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err
    assert cli.main(["diff", *map(str, saved), "--group-by", "op", "--depth", "2"]) == 2
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["diff", *map(str, saved), "--min-change", "five"])
    assert exit_info.value.code == 2
    with pytest.raises(PyfxprofError, match="--depth needs --group-by module"):
        run_diff(*saved, "--depth", "2")


def test_percent_and_label_parsing():
    assert diff_command.fraction("5%") == diff_command.fraction("0.05") == 0.05
    with pytest.raises(argparse.ArgumentTypeError):
        diff_command.fraction("-1%")
    assert diff_command.default_labels("a/run.json", "b/run.json") == ("run", "run (2)")


def test_several_sessions_per_side(saved, capsys):
    before, after = saved
    assert run_diff("--control", before, before, "--test", after, after) == 0
    out = capsys.readouterr().out
    assert "2 vs 2 sessions: t-test over sessions per row" in out
    with pytest.raises(PyfxprofError, match="give one control and one test"):
        run_diff(before, "--control", before, "--test", after)


def session_profiles(rng, shift, slow_row=None, rows=13, runs=30):
    """Two saved-session-like profiles of one 13-row model: the test session `shift` slower
    as a whole, each row +-2% of its own, 3% run noise; `slow_row` 30% slower."""
    import numpy as np
    import pandas as pd
    from pyfxprof.data.profile import Profile
    nodes = pd.DataFrame({"index": range(rows), "name": [f"block{i}" for i in range(rows)],
                          "op": "call_module", "target": "block",
                          "module_path": [f"blocks.{i}" for i in range(rows)],
                          "module_type": "Block", "module_stack": [()] * rows})
    base = np.linspace(20e3, 60e3, rows)
    row_effect = rng.lognormal(0.0, 0.02, rows)
    if slow_row is not None:
        row_effect[slow_row] *= 1.3
    made = []
    for factor in (np.ones(rows), shift * row_effect):
        samples = (base * factor * rng.lognormal(0.0, 0.03, (runs, rows))).astype(np.int64)
        made.append(Profile(nodes, samples, samples.sum(axis=1) + 1000, {"model": "net"}))
    return made


def gate_codes(tmp_path, seed, shift, slow_row=None, trials=20):
    """The gate's exit codes over `trials` pairs of generated sessions (session_profiles)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    codes = []
    for trial in range(trials):
        control, test = session_profiles(rng, shift=shift, slow_row=slow_row)
        save_profile(control, tmp_path / f"a{trial}.json")
        save_profile(test, tmp_path / f"b{trial}.json")
        codes.append(run_diff(tmp_path / f"a{trial}.json", tmp_path / f"b{trial}.json",
                              "--fail-on-regression", "5%"))
    return codes


def test_gate_passes_unchanged_reruns(tmp_path, capsys):
    """The CI version of the A/A gate check: 20 unchanged reruns whose sessions differ by 2%
    as a whole and 2% row by row (deterministic samples): the gate exits 0 in >= 19."""
    assert gate_codes(tmp_path, 33, shift=1.02).count(diff_command.PASSED) >= 19
    capsys.readouterr()


def test_gate_never_passes_a_whole_session_shift_it_cannot_separate(tmp_path, capsys):
    """Every row 10% slower in the test session: a change of the whole model or a drift
    between the sessions; one session per side cannot tell, so the gate exits 3, never 0."""
    codes = gate_codes(tmp_path, 34, shift=1.10, trials=5)
    assert codes == [diff_command.UNSEPARATED] * 5
    out = capsys.readouterr().out
    assert "UNSEPARATED: the run total is +" in out
    assert "cannot tell a slowdown >= 5% from a drift between the two sessions" in out
    assert len(diff_command.GATE_CODES) == len(set(diff_command.GATE_CODES)) == 4


def test_gate_catches_one_slower_row_in_shifted_sessions(tmp_path, capsys):
    import numpy as np
    control, test = session_profiles(np.random.default_rng(5), shift=1.04, slow_row=4)
    save_profile(control, tmp_path / "a.json")
    save_profile(test, tmp_path / "b.json")
    assert run_diff(tmp_path / "a.json", tmp_path / "b.json", "--fail-on-regression", "5%") == 1
    out = capsys.readouterr().out
    assert "  node blocks.4/block4: " in out
    assert out.count("\n  node ") == 1


def with_outside(profile, share, rng):
    """`profile` with a resolved (Python outside the graph) row worth `share` of its runs
    (each run's own call around its graph; data.outside_graph.with_outside_graph)."""
    from pyfxprof.data.outside_graph import with_outside_graph
    calls = (profile.run_totals * (1.0 + share) * rng.lognormal(0.0, 0.01, profile.n_runs))
    return with_outside_graph(profile, calls.astype(int), around_ns=calls.astype(int))


@pytest.mark.parametrize("side, share", [("control", 0.3), ("test", 0.3), ("test", 0.08),
                                         ("control", 0.6)])
def test_gate_passes_unchanged_reruns_where_one_session_alone_resolved_an_outside_row(
        tmp_path, capsys, side, share):
    """Only one session resolved a (Python outside the graph) row: its run totals are the
    user's call, the other's the graph's; compared as they were, an unchanged rerun's total
    moved by the whole row (a false +30% or -23%). Both are compared as graphs."""
    import numpy as np
    rng = np.random.default_rng(41)
    codes = []
    for trial in range(20):
        control, test = session_profiles(rng, shift=1.01)
        if side == "control":
            control = with_outside(control, share, rng)
        else:
            test = with_outside(test, share, rng)
        save_profile(control, tmp_path / f"a{trial}.json")
        save_profile(test, tmp_path / f"b{trial}.json")
        codes.append(run_diff(tmp_path / f"a{trial}.json", tmp_path / f"b{trial}.json",
                              "--fail-on-regression", "5%"))
    assert codes.count(diff_command.PASSED) >= 19
    label = "a" if side == "control" else "b"   # the file names' labels
    assert f"only {label}19 resolved a (Python outside the graph) row" in capsys.readouterr().out


@pytest.mark.parametrize("factors", [(1.0, 1.0), (1.0, 3.0), (2.0, 1.0)])
def test_gate_names_no_row_that_is_not_a_node(tmp_path, capsys, factors):
    """Both sessions resolved the outside row, the test's up to 3x (its figure is the call
    of other invocations than the nodes' at a level that drifts between sessions): the gate
    judges it through the run total, never as a node line, whatever the row does."""
    import numpy as np
    rng = np.random.default_rng(43)
    control, test = session_profiles(rng, shift=1.0)
    control = with_outside(control, 0.1 * factors[0], rng)
    test = with_outside(test, 0.1 * factors[1], rng)
    save_profile(control, tmp_path / "a.json")
    save_profile(test, tmp_path / "b.json")
    code = run_diff(tmp_path / "a.json", tmp_path / "b.json", "--fail-on-regression", "5%")
    out = capsys.readouterr().out
    assert "node (Python outside the graph)" not in out
    grown = (1 + 0.1 * factors[1]) / (1 + 0.1 * factors[0]) - 1
    assert (code != diff_command.PASSED) == (grown >= 0.05)


def shaped_sessions(rng, drift, factors, outside):
    """Two saved-session-like profiles of a model of two 300 us nodes and eleven of 3-15 us:
    the test session `drift` (log) slower on its short rows and 0.4 x `drift` on its long
    ones (as between two sessions on a loaded machine, benchmarks/README.md), each row +-3%
    of its own, 3% run noise, the test's rows times `factors`; `outside`: the side(s) that
    resolved a (Python outside the graph) row (10-40% of the graph, the same on both)."""
    import numpy as np
    from pyfxprof.data.profile import Profile
    durations = np.array([300e3, 300e3] + list(np.linspace(3e3, 15e3, 11)))
    rows = len(durations)
    nodes = session_profiles(rng, 1.0, rows=rows)[0].nodes
    elasticity = np.where(durations > 100e3, 0.4, 1.0)
    made = []
    for factor, shift in ((np.ones(rows), 0.0), (np.asarray(factors), drift)):
        level = durations * factor * np.exp(shift * elasticity) * rng.lognormal(0, 0.03, rows)
        samples = (level * rng.lognormal(0.0, 0.03, (30, rows))).astype(np.int64)
        made.append(Profile(nodes, samples, samples.sum(axis=1), {"model": "net"}))
    share = rng.uniform(0.1, 0.4)   # of the graph's time, on both sides: unchanged
    return [with_outside(prof, share, rng) if side in outside else prof
            for prof, side in zip(made, ("control", "test"))]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10 ** 6), drift=st.floats(-0.5, 0.5),
       change=st.sampled_from(["none", "doubled", "long +20%", "all +20%"]),
       outside=st.sampled_from([(), ("control",), ("test",), ("control", "test")]))
def test_the_gate_decides_what_its_sessions_show(tmp_path_factory, seed, drift, change,
                                                 outside):
    """Generated pairs of sessions of a known change, a drift of up to ±50% (the short
    rows; 0.4x that on the long ones) and outside rows: an unchanged rerun never fails as a
    regression; a node doubled, the long rows +20% or every row +20% never pass, even where
    the test session ran faster as a whole and its total reads less than the threshold (the
    sessions' own noise, 3% per row, puts +20% 5 SDs above the threshold)."""
    import numpy as np
    factors = {"none": np.ones(13), "doubled": np.r_[1.0, 2.0, np.ones(11)],
               "long +20%": np.r_[1.2, 1.2, np.ones(11)], "all +20%": np.full(13, 1.2)}
    control, test = shaped_sessions(np.random.default_rng(seed), drift, factors[change],
                                    outside)
    root = tmp_path_factory.mktemp("gate")
    save_profile(control, root / "a.json")
    save_profile(test, root / "b.json")
    code = run_diff(root / "a.json", root / "b.json", "--fail-on-regression", "5%")
    if change == "none":
        assert code != diff_command.REGRESSION
    else:
        assert code in (diff_command.REGRESSION, diff_command.UNSEPARATED)


@pytest.mark.parametrize("change", ["none", "long +20%", "doubled"])
@pytest.mark.parametrize("outside", [(0.35, 0.07), (0.07, 0.35), (0.2, 0.2)])
def test_the_user_calls_outside_row_never_hides_a_slower_graph(tmp_path, capsys, change,
                                                                outside):
    """Both sessions resolved the (Python outside the graph) row, at `outside` shares of
    their graphs (it is the user's call less the nodes of another call: 351 -> 72 us between
    two saved sessions of bench_gate's model, the call's total -9% while both long nodes
    were 15% slower): a slower graph never passes, whatever the outside row did (the graph's
    total, its nodes summed, is gated too), and an unchanged graph never fails unless the
    user's call grew (the run total is that call: its outside row grown 7% -> 35% of the
    graph is a slower call, test_gate_names_no_row_that_is_not_a_node)."""
    import numpy as np
    rng = np.random.default_rng(sum(map(ord, change)) + int(100 * outside[0]))
    factors = {"none": np.ones(13), "doubled": np.r_[1.0, 2.0, np.ones(11)],
               "long +20%": np.r_[1.2, 1.2, np.ones(11)]}
    control, test = shaped_sessions(rng, 0.0, factors[change], ())
    control, test = with_outside(control, outside[0], rng), with_outside(test, outside[1], rng)
    save_profile(control, tmp_path / "a.json")
    save_profile(test, tmp_path / "b.json")
    code = run_diff(tmp_path / "a.json", tmp_path / "b.json", "--fail-on-regression", "5%")
    out = capsys.readouterr().out
    if change != "none":
        assert code in (diff_command.REGRESSION, diff_command.UNSEPARATED)
        assert "graph" in out or "node " in out
    elif outside[1] <= outside[0]:
        assert code != diff_command.REGRESSION
