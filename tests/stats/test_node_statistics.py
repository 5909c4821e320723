"""Per-node statistics (stats/node_statistics.py): hand-computed cases, numpy's reference at
every size (1 to 100,000 runs, ties, zeros, 1e15 ns), NaN and inf refused."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyfxprof.errors import ArgumentError
from pyfxprof.stats.node_statistics import (STAT_COLUMNS, cumulative_pct, group_samples,
                                            node_statistics, noisy_mask, relative_iqr,
                                            summary_of_totals, with_flop_rate)


def _row(stats, i):
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in stats.iloc[i].items()}


# Columns: a = 10,20,30,40; b = all zero; c = 100,100,100,200 (hand-computed below).
FOUR_RUNS = np.array([[10, 0, 100], [20, 0, 100], [30, 0, 100], [40, 0, 200]], dtype=np.int64)


def test_columns_and_dtypes():
    stats = node_statistics(FOUR_RUNS)
    assert tuple(stats.columns) == STAT_COLUMNS
    assert stats["count"].dtype == np.int64
    assert all(stats[c].dtype == np.float64 for c in STAT_COLUMNS if c != "count")
    assert list(stats.index) == [0, 1, 2]


def test_hand_computed_four_runs():
    a = _row(node_statistics(FOUR_RUNS), 0)
    assert a["count"] == 4
    assert a["total"] == 100.0
    assert a["mean"] == 25.0
    assert a["median"] == 25.0
    assert (a["min"], a["max"]) == (10.0, 40.0)
    assert a["std"] == pytest.approx(math.sqrt(500 / 3))  # squares 225+25+25+225, ddof=1
    assert a["p10"] == pytest.approx(13.0)  # position 0.3 between 10 and 20
    assert a["p90"] == pytest.approx(37.0)  # position 2.7 between 30 and 40
    assert a["p99"] == pytest.approx(39.7)
    assert a["iqr"] == pytest.approx(32.5 - 17.5)
    assert a["pct_total"] == pytest.approx(100 / 6)


def test_hand_computed_skewed_column():
    c = _row(node_statistics(FOUR_RUNS), 2)
    assert c["total"] == 500.0
    assert c["mean"] == 125.0
    assert c["median"] == 100.0
    assert c["std"] == pytest.approx(50.0)  # (3 * 625 + 5625) / 3 = 2500
    assert c["p90"] == pytest.approx(170.0)
    assert c["p99"] == pytest.approx(197.0)
    assert c["iqr"] == pytest.approx(25.0)  # p75 = 125, p25 = 100
    assert c["pct_total"] == pytest.approx(500 / 6)


def test_zero_column_has_zero_stats():
    b = _row(node_statistics(FOUR_RUNS), 1)
    assert b["total"] == 0.0 and b["median"] == 0.0 and b["std"] == 0.0 and b["iqr"] == 0.0
    assert b["pct_total"] == 0.0


def test_one_run_std_is_nan_and_order_stats_are_the_value():
    stats = node_statistics(np.array([[7, 3]], dtype=np.int64))
    row = _row(stats, 0)
    assert row["count"] == 1
    assert math.isnan(row["std"])
    assert row["mean"] == row["median"] == row["min"] == row["max"] == 7.0
    assert row["p10"] == row["p90"] == row["p99"] == 7.0
    assert row["iqr"] == 0.0
    assert stats["pct_total"].tolist() == pytest.approx([70.0, 30.0])


def test_two_runs():
    row = _row(node_statistics(np.array([[10], [30]], dtype=np.int64)), 0)
    assert row["count"] == 2
    assert row["mean"] == row["median"] == 20.0
    assert row["std"] == pytest.approx(math.sqrt(200))
    assert row["p10"] == pytest.approx(12.0)
    assert row["p90"] == pytest.approx(28.0)
    assert row["p99"] == pytest.approx(29.8)
    assert row["iqr"] == pytest.approx(10.0)  # 25 - 15
    assert row["pct_total"] == 100.0


def test_no_runs_gives_nan_statistics_and_zero_totals():
    stats = node_statistics(np.zeros((0, 2), dtype=np.int64))
    assert stats["count"].tolist() == [0, 0]
    assert stats["total"].tolist() == [0.0, 0.0]
    assert stats["pct_total"].tolist() == [0.0, 0.0]
    for column in ("mean", "median", "min", "max", "std", "p10", "p90", "p99", "iqr"):
        assert stats[column].isna().all(), column


def test_all_zero_pct_total_is_zero_not_nan():
    stats = node_statistics(np.zeros((3, 2), dtype=np.int64))
    assert stats["pct_total"].tolist() == [0.0, 0.0]


def test_no_nodes_gives_empty_frame_with_columns():
    stats = node_statistics(np.zeros((3, 0), dtype=np.int64))
    assert len(stats) == 0
    assert tuple(stats.columns) == STAT_COLUMNS


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(runs=st.one_of(st.integers(1, 40), st.integers(41, 100_000)), nodes=st.integers(1, 4),
       seed=st.integers(0, 2**32), kind=st.sampled_from(["ties", "zeros", "huge", "ns"]))
def test_every_statistic_is_numpys_at_every_size(runs, nodes, seed, kind):
    rng = np.random.default_rng(seed)
    samples = {"ties": rng.integers(0, 3, (runs, nodes)) * 1000,
               "zeros": np.zeros((runs, nodes), dtype=np.int64),
               "huge": 10**15 + rng.integers(0, 10**6, (runs, nodes)),
               "ns": rng.integers(0, 10**9, (runs, nodes))}[kind]
    stats = node_statistics(samples)
    values = samples.astype(np.float64)
    for q, column in ((10, "p10"), (50, "median"), (90, "p90"), (99, "p99")):
        np.testing.assert_allclose(stats[column], np.percentile(values, q, axis=0), rtol=1e-12)
    iqr = np.percentile(values, 75, axis=0) - np.percentile(values, 25, axis=0)
    np.testing.assert_allclose(stats["iqr"], iqr, rtol=1e-9, atol=1e-6 * values.max(initial=0))
    np.testing.assert_allclose(stats["mean"], values.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(stats["min"], values.min(axis=0))
    np.testing.assert_allclose(stats["max"], values.max(axis=0))
    if runs > 1:
        np.testing.assert_allclose(stats["std"], values.std(axis=0, ddof=1), rtol=1e-9,
                                   atol=1e-9 * values.max(initial=0))
    else:
        assert stats["std"].isna().all()
    np.testing.assert_allclose(stats["total"], values.sum(axis=0), rtol=1e-12)
    assert (stats["count"] == runs).all()
    assert stats["pct_total"].sum() == pytest.approx(100.0 if values.any() else 0.0)


@pytest.mark.parametrize("bad", [np.array([[1.0, np.nan]]), np.array([[np.inf], [1.0]])])
def test_nan_and_infinite_samples_are_refused(bad):
    with pytest.raises(ArgumentError, match="finite"):
        node_statistics(bad)


@pytest.mark.parametrize("bad", [np.arange(3), np.zeros((2, 2, 2)), np.array([["a"]])])
def test_rejects_bad_samples(bad):
    with pytest.raises(ValueError, match="samples"):
        node_statistics(bad)


def test_cumulative_pct_keeps_series_order_and_index():
    cum = cumulative_pct(pd.Series([10.0, 60.0, 30.0], index=[2, 0, 1]))
    assert cum.tolist() == [10.0, 70.0, 100.0]
    assert cum.index.tolist() == [2, 0, 1]


def test_cumulative_pct_of_array():
    cum = cumulative_pct(np.array([25, 25, 50]))
    assert isinstance(cum, np.ndarray)
    assert cum.tolist() == [25.0, 50.0, 100.0]


def _noise_frame(iqr, median, pct):
    return pd.DataFrame({"iqr": iqr, "median": median, "pct_total": pct})


def test_relative_iqr_edge_cases():
    rel = relative_iqr(_noise_frame([10.0, 0.0, 5.0], [100.0, 0.0, 0.0], [1.0, 1.0, 1.0]))
    assert rel[0] == pytest.approx(0.1)
    assert math.isnan(rel[1])  # nothing measured: not a ratio
    assert rel[2] == math.inf


def test_noisy_rule_thresholds():
    frame = _noise_frame(
        iqr=[10.0, 11.0, 50.0, 50.0, 5.0, 0.0],
        median=[100.0, 100.0, 100.0, 100.0, 0.0, 0.0],
        pct=[50.0, 20.0, 0.99, 1.0, 10.0, 18.01],
    )
    # 10% exactly is fine; 11% is noisy; below 1% of the total never warns;
    # a zero median with spread is noisy; an all-zero node is not.
    assert noisy_mask(frame).tolist() == [False, True, False, True, True, False]


def test_noisy_rule_custom_thresholds():
    frame = _noise_frame([20.0, 20.0], [100.0, 100.0], [5.0, 0.5])
    assert noisy_mask(frame, max_rel_iqr=0.25).tolist() == [False, False]
    assert noisy_mask(frame, min_pct=0.1).tolist() == [True, True]


def test_group_samples_sums_in_first_appearance_order():
    samples = np.array([[1, 2, 4, 8], [10, 20, 40, 80]], dtype=np.int64)
    names, grouped = group_samples(samples, ["relu", "conv", "relu", "add"])
    assert names == ["relu", "conv", "add"]
    assert grouped.tolist() == [[5, 2, 8], [50, 20, 80]]
    assert grouped.dtype == np.int64


def test_group_samples_accepts_series_and_returns_plain_str():
    samples = np.ones((3, 3), dtype=np.int64)
    names, grouped = group_samples(samples, pd.Series(np.array(["b", "a", "b"])))
    assert names == ["b", "a"]
    assert all(type(n) is str for n in names)
    assert grouped.tolist() == [[2, 1]] * 3


def test_group_samples_empty_string_key_is_a_group():
    names, grouped = group_samples(np.array([[1, 2, 3]]), ["", "x", ""])
    assert names == ["", "x"]
    assert grouped.tolist() == [[4, 2]]


def test_group_samples_degenerate_shapes():
    names, grouped = group_samples(np.zeros((4, 0), dtype=np.int64), [])
    assert names == [] and grouped.shape == (4, 0)
    names, grouped = group_samples(np.zeros((0, 3), dtype=np.int64), ["a", "b", "a"])
    assert names == ["a", "b"] and grouped.shape == (0, 2)


def test_group_samples_key_count_must_match():
    with pytest.raises(ValueError, match="one key per node"):
        group_samples(np.zeros((2, 3), dtype=np.int64), ["a", "b"])


def test_summary_of_totals_hand_computed():
    summary = summary_of_totals(np.array([400, 100, 300, 200]))
    assert summary == {"median": 250.0, "iqr": 150.0, "mean": 250.0, "min": 100.0, "max": 400.0}


def test_summary_of_totals_small_n():
    assert summary_of_totals([5]) == {"median": 5.0, "iqr": 0.0, "mean": 5.0,
                                      "min": 5.0, "max": 5.0}
    empty = summary_of_totals(np.array([], dtype=np.int64))
    assert set(empty) == {"median", "iqr", "mean", "min", "max"}
    assert all(math.isnan(v) for v in empty.values())


def test_with_flop_rate_leaves_frames_without_flops_alone():
    frame = pd.DataFrame({"median": [1.0]})
    assert list(with_flop_rate(frame).columns) == ["median"]
    rated = with_flop_rate(pd.DataFrame({"flops": [10, 10], "median": [0.0, float("nan")]}))
    assert rated["flop_per_s"].isna().all()


def test_docs_table_of_statistics_is_the_registry():
    from pyfxprof.stats.node_statistics import STATISTICS
    from tests.docs_tables import table_after
    rows = [row for row in table_after("profile.md", "## `to_dataframe()` columns")
            if row[0].strip("`") in STAT_COLUMNS]
    assert rows == [[f"`{s.name}`", s.unit, s.meaning] for s in STATISTICS]


def test_report_titles_and_number_formats_follow_each_statistics_unit():
    from pyfxprof.views.report import profile_table
    from tests.views.test_exporters import toy_profile
    lines = profile_table(toy_profile(), columns=["name", "count", "p99", "pct_total"],
                          width=None, sort_by="order").splitlines()
    title = next(k for k, line in enumerate(lines) if line.startswith("Node"))
    assert lines[title].split() == ["Node", "Runs", "P99", "Total", "%"]
    # conv1 runs 400, 500, 450 ns: p99 450 + 0.98 x 50; total 1350 of 2358 ns
    assert lines[title + 2].split() == ["conv1", "3", "499", "ns", "57.3%"]
