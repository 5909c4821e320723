"""Tests for pyfxprof.data.replay_result: the ratios and which isolated time the in-graph
median matches, over generated medians."""

import math

from hypothesis import given, strategies as st

from pyfxprof.data.replay_result import ReplayResult

times = st.floats(1.0, 1e9)


@given(times, times, times)
def test_the_match_is_the_isolated_time_nearest_in_ratio(warm, cold, in_graph):
    result = ReplayResult("n", "call_module", "m", "", warm_ns=warm, cold_ns=cold,
                          in_graph_ns=in_graph)
    assert math.isclose(result.ratio("warm") * warm, in_graph)
    other = "cold" if result.matches == "warm" else "warm"
    assert abs(math.log(result.ratio(result.matches))) <= abs(math.log(result.ratio(other)))


@given(times, times)
def test_no_match_unless_both_caches_were_timed(alone, in_graph):
    assert ReplayResult("n", "op", "t", "", warm_ns=alone, in_graph_ns=in_graph).matches == ""
    assert ReplayResult("n", "op", "t", "", cold_ns=alone, in_graph_ns=in_graph).matches == ""
    assert math.isnan(ReplayResult("n", "op", "t", "", warm_ns=alone).ratio("cold"))
