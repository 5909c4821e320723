"""The advisor's rule for the Python outside the graph."""

from pyfxprof.analyses.advisor import advise
from tests.outside_profiles import outside_profile


def test_a_large_share_of_the_call_outside_the_ops_is_advice_with_its_functions():
    advice = advise(outside_profile(outside_ns=3000), rules=["python_outside_graph"])
    assert len(advice) == 1
    suggestion = advice[0]
    assert suggestion.severity == "high" and suggestion.nodes == ["(Python outside the graph)"]
    assert suggestion.evidence[0].startswith("76.9% of the call is Python outside the ops")
    assert suggestion.evidence[1].startswith("Net.forward [model] ×1 at net.py:10: 1.80 µs")
    assert "compile it" in suggestion.action


def test_a_small_share_is_no_advice():
    assert advise(outside_profile(outside_ns=60), rules=["python_outside_graph"]) == []
