"""The functions of the (Python outside the graph) row, under it in the report's table."""

from pyfxprof.data.outside_graph import OUTSIDE_GRAPH
from tests.outside_profiles import graph_profile, outside_profile


def _lines(text: str) -> list[str]:
    return text.splitlines()


def test_the_row_leads_the_table_with_its_functions_under_it():
    lines = _lines(outside_profile().table(width=None))
    at = next(i for i, line in enumerate(lines) if OUTSIDE_GRAPH in line)
    assert "76.9%" in lines[at]  # 3000 of the 3900 ns the rows sum to: the call
    under = lines[at + 1:at + 4]
    assert [line.split()[1] for line in under] == [
        "Net.forward", "Module._call_impl", "torch._C._get_tracing_state"]
    assert "net.py:10 ×1" in under[0] and "1.80 µs" in under[0] and "46.2%" in under[0]
    assert "torch (C)" in under[2]
    assert "mm" in lines[at + 4]  # then the graph's rows
    assert "(your call; graph 1.00 µs, Python outside its nodes 3.00 µs = 76.9%)" in lines[1]
    assert "coverage 23.1% of your call · rows sum to 100.0% of your call" in lines[1]


def test_group_tables_and_profiles_without_the_row_have_no_function_lines():
    assert "└" not in outside_profile().table(group_by="op", width=None)
    assert "└" not in graph_profile().table(width=None)
    assert "Net.forward" not in outside_profile().table(columns=["median", "pct_total"])
