"""Tests of pyfxprof.cli.parsers and parser_writer: the sub-commands' parsers as data
(cli/parser_table.py)."""

import argparse
import dataclasses
import importlib

import pytest

from pyfxprof.cli import parsers, parser_writer
from pyfxprof.cli.main import COMMAND_MODULES, build_parser
from pyfxprof.cli.parser_table import COMMANDS


def test_the_table_is_what_the_command_modules_register():
    assert parser_writer.command_specs(COMMAND_MODULES) == COMMANDS, \
        "cli/parser_table.py is stale: run `python -m pyfxprof.cli.parser_writer` and commit the table"


def _sub_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    return parser._subparsers._group_actions[0].choices[name]


@pytest.mark.parametrize("name", COMMAND_MODULES)
def test_the_parser_built_from_the_table_is_the_modules_parser(name):
    direct = argparse.ArgumentParser(prog="pyfxprof", description=build_parser().description)
    module = importlib.import_module(f"pyfxprof.cli.commands.{name}")
    module.add_parser(direct.add_subparsers(dest="command", metavar="COMMAND", required=True))
    built = build_parser(name)
    assert _sub_parser(built, name).format_help() == _sub_parser(direct, name).format_help()
    argv = {"report": ["p.json"], "diff": ["a.json", "b.json"], "ab": ["m:a", "m:b"],
            "bench": ["x + 1"], "replay": ["m:a", "conv"]}.get(name, [])
    expected, parsed = vars(direct.parse_args([name, *argv])), vars(built.parse_args([name,
                                                                                      *argv]))
    assert parsed.pop("func").resolve() is expected.pop("func") is module.run
    assert parsed == expected


def test_references_import_on_call_and_keep_argparse_messages():
    threshold = parsers.Reference("pyfxprof.cli.commands.arg_types:integer_at_least", (2,))
    assert threshold("3") == 3 and threshold.__name__ == "integer_at_least"
    with pytest.raises(argparse.ArgumentTypeError, match="expected an integer >= 2"):
        threshold("1")
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=parsers.Reference("builtins:int", name="int"))
    with pytest.raises(SystemExit):
        parser.parse_args(["--n", "x"])  # "invalid int value: 'x'", as with type=int


def test_types_that_cannot_be_named_are_refused():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=lambda text: int(text))
    with pytest.raises(ValueError, match="not a module-level callable"):
        parser_writer.describe(parser, None)


def test_a_dataclass_type_is_rebuilt_from_its_fields():
    from pyfxprof.cli.commands.arg_types import integer_at_least
    value = parser_writer.table_value(integer_at_least(3))
    assert value["args"] == [3] and dataclasses.is_dataclass(integer_at_least(3))
    assert parsers.loaded(value).resolve() == integer_at_least(3)


@pytest.mark.parametrize("name", COMMAND_MODULES)
def test_help_prints_no_escaped_percent(name):
    # argparse %-formats argument help ("95%%" prints 95%) but not a description
    assert "%%" not in _sub_parser(build_parser(name), name).format_help()
