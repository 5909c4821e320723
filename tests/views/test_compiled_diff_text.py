"""CompiledDiff as text (views/compiled_diff_text.py); the tables themselves are checked on real
compiled profiles in tests/test_compiled.py and tests/analyses/test_exported.py."""

import pyfxprof
from pyfxprof.analyses.compiled_diff import CompiledDiff
from pyfxprof.views.compiled_diff_text import (cell, compiled_ops_table, compiled_repr,
                                               compiled_table)


def test_cells_are_counted():
    assert cell(("", "a", "a", "b"), limit=2) == "(root), a +1"
    assert cell(None) == "" and cell(("x",)) == "x"


def test_the_served_methods_are_the_views_functions():
    assert pyfxprof._METHODS["CompiledDiff.table"] == ("views.compiled_diff_text",
                                                       compiled_table.__name__)
    assert CompiledDiff.ops_table is compiled_ops_table and CompiledDiff.__repr__ is compiled_repr
