"""The capture modes are spelled once: capture/rungs.py's table, read by the ladder, the loop,
profile() and the CLI; no other module compares a mode string or keys a dict by one."""

import ast
from pathlib import Path

import pyfxprof
from pyfxprof.data import rungs
from pyfxprof.data.rungs import CAPTURE_MODES, RUNG, RUNGS, STATIC_MODES, TABLE

PACKAGE = Path(pyfxprof.__file__).parent
NAMES = {rung.name for rung in TABLE}


def _literal_names(node) -> list[str]:
    """The mode names `node` spells as string literals (itself, or inside a tuple/list/set)."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [item.value for item in items
            if isinstance(item, ast.Constant) and item.value in NAMES]


def spelled_modes(source: str) -> list[tuple[int, str]]:
    """(line, name) of each mode string compared (==, !=, in) or used as a dict key."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                found += [(node.lineno, name) for name in _literal_names(operand)]
        elif isinstance(node, ast.Dict):
            found += [(node.lineno, name) for key in node.keys if key is not None
                      for name in _literal_names(key)]
    return found


def test_the_detector_finds_each_spelling():
    source = ('a = mode == "fx"\nb = mode in ("dynamo", "x")\nc = {"hooks": 1}\n'
              'd = "whole" != mode\ne = mode == FX\nf = "fx" + "y"\n')
    assert spelled_modes(source) == [(1, "fx"), (2, "dynamo"), (3, "hooks"), (4, "whole")]


def test_no_module_but_the_table_compares_a_mode_string():
    offenders = [f"{path.relative_to(PACKAGE)}:{line}: {name!r}"
                 for path in sorted(PACKAGE.rglob("*.py"))
                 if path != Path(rungs.__file__) and path.name != "parser_table.py"
                 for line, name in spelled_modes(path.read_text())]
    assert offenders == [], "compare with capture/rungs.py's names or properties:\n" + \
        "\n".join(offenders)


def test_the_table_derives_the_mode_lists():
    assert RUNGS == ("fx", "dynamo", "fx+leaf", "hooks", "whole")
    assert CAPTURE_MODES == ("auto", "fx", "dynamo", "hooks", "whole")
    assert STATIC_MODES == ("fx", "fx+leaf", "hooks", "whole")
    assert [name for name in RUNGS if RUNG[name].own_call] == ["hooks", "whole"]


def test_the_cli_offers_the_forcible_rungs():
    from pyfxprof.run.runner import CHOICES
    assert CHOICES["capture"] == CAPTURE_MODES
