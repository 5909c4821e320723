"""Chrome traces of a RankProfiles: one process row per rank, distributedInfo per rank, and a
directory of per-rank files that Holistic Trace Analysis loads as one multi-rank trace."""

from __future__ import annotations

import json

import pytest

from pyfxprof.data.rank_profiles import RankProfiles
from pyfxprof.views.rank_trace import chrome_trace_of_ranks
from tests.data.test_rank_profiles import straggling_world


def test_one_process_row_per_rank_with_its_distributed_info(tmp_path):
    ranks = RankProfiles(straggling_world().profiles, failures={4: "boom"}, world_size=5)
    trace = chrome_trace_of_ranks(ranks, runs=[0, 1])
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["name"] == "process_name"}
    assert names == {r: f"pyfxprof step (rank {r})" for r in range(4)}
    spins = [e for e in trace["traceEvents"] if e["name"] == "spin"]
    assert sorted({e["pid"] for e in spins}) == [0, 1, 2, 3] and len(spins) == 8
    assert max(spins, key=lambda e: e["dur"])["pid"] == 3
    assert trace["otherData"]["ranks"]["2"] == {"backend": "gloo", "rank": 2, "world_size": 5}
    assert trace["otherData"]["failures"] == {"4": "boom"}
    ranks.export_chrome_trace(tmp_path / "t.json.gz")


def test_hta_loads_the_per_rank_traces_as_one_multi_rank_trace(tmp_path):
    trace_analysis = pytest.importorskip("hta.trace_analysis")
    paths = straggling_world().export_rank_traces(tmp_path / "traces", runs=[0, 1, 2])
    assert [p.name for p in paths] == [f"rank_{r}.json" for r in range(4)]
    trace = json.loads(paths[3].read_text())
    assert trace["distributedInfo"] == {"backend": "gloo", "rank": 3, "world_size": 4}
    assert {e["pid"] for e in trace["traceEvents"]} == {3}
    analysis = trace_analysis.TraceAnalysis(trace_dir=str(tmp_path / "traces"))
    assert sorted(analysis.t.get_ranks()) == [0, 1, 2, 3]
    for rank in range(4):
        frame = analysis.t.get_trace(rank)
        names = frame["name"].map(analysis.t.symbol_table.get_sym_table().__getitem__)
        steps = names.str.startswith("ProfilerStep#").sum()
        assert steps >= 2 and (names == "spin").sum() == steps  # one spin node per step
