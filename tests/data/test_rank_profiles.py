"""RankProfiles without processes: per-node medians across ranks, spread, slowest rank, waits
in collectives, the per-rank compute/communication split, stragglers, and the gathered file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import pyfxprof
from pyfxprof.data.profile import Profile
from pyfxprof.data.rank_profiles import RankProfiles, from_document, load_rank_profiles
from pyfxprof.errors import PyfxprofError

NAMES = ["linear", "spin", "all_reduce", "relu"]


def nodes() -> pd.DataFrame:
    return pd.DataFrame({
        "index": [0, 1, 2, 3], "name": NAMES, "op": ["call_module"] + ["call_function"] * 3,
        "target": ["linear", "spin", "torch.ops._c10d_functional.all_reduce", "torch.relu"],
        "module_path": ["linear", "", "", ""], "module_type": ["Linear", "M", "M", "M"],
        "module_stack": [("linear",), (), (), ()],
        "communication": [False, False, True, False]})


def rank_profile(rank: int, medians, runs: int = 9, seed: int = 0) -> Profile:
    """Samples spread +-2% around ``medians`` (exactly the median in the middle run)."""
    rng = np.random.default_rng(seed + rank)
    factors = np.sort(np.r_[1.0, rng.uniform(0.98, 1.0, runs // 2),
                            rng.uniform(1.0, 1.02, runs - 1 - runs // 2)])
    samples = np.rint(np.outer(factors, medians)).astype(np.int64)
    meta = {"model": "step", "distributed": {"rank": rank, "world_size": 4, "backend": "gloo"}}
    return Profile(nodes(), samples, samples.sum(axis=1) + 1000, meta)


def straggling_world() -> RankProfiles:
    """Rank 3 is 2 ms slower in spin; ranks 0-2 wait for it in all_reduce."""
    fast = [100_000, 10_000, 2_050_000, 5_000]
    slow = [100_000, 2_010_000, 50_000, 5_000]
    return RankProfiles({r: rank_profile(r, slow if r == 3 else fast) for r in range(4)})


def test_medians_spread_and_slowest_rank_per_node():
    frame = straggling_world().to_dataframe()
    assert list(frame.index) == ["linear/linear", "spin", "all_reduce", "relu"]
    assert frame.loc["spin", ["rank_0", "rank_3"]].tolist() == [10_000.0, 2_010_000.0]
    assert frame.loc["spin", "spread"] == 2_000_000.0
    assert frame.loc["spin", "median"] == 10_000.0
    assert frame.loc["spin", "spread_pct"] == pytest.approx(100 * 2_000_000 / 10_000)
    assert frame.loc["spin", "slowest_rank"] == 3
    assert frame.loc["all_reduce", "slowest_rank"] == 0  # ties go to the first rank
    assert frame["communication"].tolist() == [False, False, True, False]


def test_waits_are_each_ranks_collective_time_beyond_the_fastest():
    ranks = straggling_world()
    waits = ranks.waits()
    assert list(waits.index) == ["all_reduce"]
    assert waits.loc["all_reduce"].tolist() == [2_000_000.0] * 3 + [0.0]
    assert ranks.to_dataframe().loc["all_reduce", "wait"] == 6_000_000.0
    summary = ranks.rank_summary()
    assert summary.loc[0, "compute"] == 115_000.0 and summary.loc[3, "compute"] == 2_115_000.0
    assert summary.loc[0, "communication"] == 2_050_000.0
    assert summary.loc[0, "wait"] == 2_000_000.0 and summary.loc[3, "wait"] == 0.0
    assert summary.loc[0, "total"] == 2_166_000.0


def test_the_straggler_is_the_slow_node_on_the_slow_rank_and_nothing_else():
    found = straggling_world().stragglers()
    assert found[["name", "rank"]].values.tolist() == [["spin", 3]]
    row = found.iloc[0]
    assert row["median"] == 2_010_000.0 and row["reference"] == 10_000.0
    assert row["excess"] == 2_000_000.0 and row["rel_excess"] == pytest.approx(200.0)
    assert row["tests"] == 12 and row["p_value"] < 0.05  # 3 compute nodes x 4 ranks


def test_a_small_systematic_difference_is_not_a_straggler():
    medians = [100_000, 10_000, 50_000, 5_000]
    ranks = RankProfiles({0: rank_profile(0, medians),
                          1: rank_profile(1, [m * 1.05 for m in medians])})
    assert ranks.stragglers().empty  # 5% slower: below min_change
    assert ranks.stragglers(min_change=0.01)["rank"].tolist() == [1, 1, 1]


def test_too_few_runs_give_no_test_and_no_straggler():
    ranks = RankProfiles({0: rank_profile(0, [1, 1, 1, 1], runs=3),
                          1: rank_profile(1, [100, 100, 100, 100], runs=3)})
    assert ranks.stragglers().empty


def test_nodes_present_on_some_ranks_only_are_nan_elsewhere():
    other = rank_profile(1, [1000, 1000, 1000, 1000])
    renamed = other.nodes.copy()
    renamed.loc[3, "name"] = "gelu"
    ranks = RankProfiles({0: rank_profile(0, [1000] * 4),
                          1: Profile(renamed, other.samples, other.run_totals, other.meta)})
    frame = ranks.to_dataframe()
    assert list(frame.index)[-2:] == ["relu", "gelu"]
    assert np.isnan(frame.loc["gelu", "rank_0"]) and frame.loc["gelu", "rank_1"] == 1000.0
    assert frame.loc["gelu", "spread"] == 0.0 and frame.loc["gelu", "slowest_rank"] == 1


def test_table_shows_ranks_failures_compute_communication_and_wait():
    ranks = RankProfiles(straggling_world().profiles, failures={4: "capture failed"},
                         world_size=5)
    text = ranks.table()
    lines = text.splitlines()
    assert lines[0] == "pyfxprof ranks — step · 4 of 5 ranks profiled"
    assert lines[1] == "rank 4 FAILED: capture failed"
    assert ["Rank", "Runs", "Run", "total", "Compute", "Communication", "Wait"] in [
        line.split() for line in lines]
    assert lines[lines.index("r3       9    2.17 ms  2.12 ms        50.0 µs     0 ns") - 3] == (
        "r0       9    2.17 ms   115 µs        2.05 ms  2.00 ms")
    node_rows = [line for line in lines if line.startswith(("spin", "all_reduce"))]
    assert node_rows[0].split()[-2:] == ["20000.0%", "r3"]
    assert node_rows[1].split()[1] == "comm" and node_rows[1].endswith("6.00 ms")
    assert [line for line in lines if line.startswith("relu")][0].split()[-1] == "-"
    assert ranks.table(top=1).splitlines()[-1] == "… 3 more nodes not shown (top=1)"


def test_many_ranks_show_min_median_max_instead_of_one_column_per_rank():
    ranks = RankProfiles({r: rank_profile(r, [1000] * 4, runs=3) for r in range(10)})
    header = [line for line in ranks.table().splitlines() if line.startswith("Node")][0]
    assert header.split() == ["Node", "Comm", "Min", "Median", "Max", "Spread", "Spread", "%",
                              "Slowest", "Wait"]


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(version=2), "unsupported rank-profiles version 2"),
    (lambda d: d.update(format="other"), "not a pyfxprof rank-profiles file"),
    (lambda d: d["ranks"].pop(), "equal length"),
    (lambda d: d["profiles"][0].update(n_nodes=7), "rank 0:"),
    (lambda d: d.update(world_size=2), "outside world size 2"),
])
def test_bad_files_are_refused_with_one_line(tmp_path, change, message):
    straggling_world().save(tmp_path / "ranks.json")
    document = json.loads((tmp_path / "ranks.json").read_text())
    change(document)
    (tmp_path / "bad.json").write_text(json.dumps(document))
    with pytest.raises(PyfxprofError, match=message) as error:
        load_rank_profiles(tmp_path / "bad.json")
    assert "\n" not in str(error.value)


def test_inconsistent_construction_is_refused():
    prof = rank_profile(0, [1, 1, 1, 1], runs=3)
    with pytest.raises(ValueError, match="both a profile and a failure"):
        RankProfiles({0: prof}, failures={0: "x"})
    with pytest.raises(ValueError, match="dict"):
        RankProfiles([prof])
    with pytest.raises(ValueError, match="alpha"):
        RankProfiles({0: prof}).stragglers(alpha=2)


def test_public_names():
    assert pyfxprof.RankProfiles is RankProfiles and callable(pyfxprof.gather)
    assert from_document.__module__ == "pyfxprof.data.rank_profiles"


def test_the_one_ranking_p_values_equal_scipys_mann_whitney_of_rank_vs_the_rest():
    from scipy.stats import mannwhitneyu
    from pyfxprof.data.rank_profiles import _node_tests
    rng = np.random.default_rng(1)
    by_rank = {r: {"k": rng.integers(0, 50, size=12 + r) + (9 if r == 2 else 0)}
               for r in range(4)}
    for _, _, rank, *_, p_value in _node_tests("k", by_rank, 5):
        others = np.concatenate([by_rank[o]["k"] for o in by_rank if o != rank])
        expected = mannwhitneyu(by_rank[rank]["k"], others, alternative="greater",
                                method="asymptotic").pvalue
        assert p_value == pytest.approx(expected, rel=1e-9)
