"""Tests of cli/commands/defaults.py: every command's defaults are its function's, one flag name
per idea (``--runs`` for every count of timed runs), old names kept as hidden aliases."""

import argparse
import dataclasses

import pytest

from pyfxprof.cli.commands.defaults import add_alias, defaults_of
from pyfxprof.cli.main import COMMAND_MODULES, build_parser

#: Words that would spell a count of timed runs another way than --runs.
OTHER_RUN_WORDS = ("round", "iteration", "iters", "repeat", "number", "times", "reps")
#: The commands that time a model several times, and so take --runs.
TIMING_COMMANDS = {"profile", "sweep", "fuse", "overhead", "replay"}
#: Each command's function, the arguments it needs, and (option dest -> parameter) renames.
FUNCTIONS = {
    "profile": ("pyfxprof.run.runner:profile", [], {}),
    "sweep": ("pyfxprof.run.sweep:sweep", [], {}),
    "fuse": ("pyfxprof.tools.fusion_bench:benchmark_fusion", [], {}),
    "overhead": ("pyfxprof.tools.overhead:compare_overhead", [], {"runs": "rounds"}),
    "ab": ("pyfxprof.run.compare:compare", ["m:a", "m:b"], {}),
}
#: Options whose default means something else on the command line: ab's --labels are the
#: callables' names rather than compare()'s ("control", "test"); profile's --compile is a flag
#: that profile_arguments turns into compile= (checked by the test after this one).
OWN_DEFAULTS = {"labels", "compile"}


def _sub_parser(name: str) -> argparse.ArgumentParser:
    return build_parser(name)._subparsers._group_actions[0].choices[name]


def _visible_options(name: str) -> list[str]:
    return [option for action in _sub_parser(name)._actions if action.help != argparse.SUPPRESS
            for option in action.option_strings]


def _function(target: str):
    import importlib
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def test_defaults_of_reads_the_signature_and_option_groups():
    @dataclasses.dataclass(frozen=True)
    class Timing:
        runs: int = 7
        warmup: int = 2

    def run(model, capture: str = "auto", *, timing: Timing = Timing(), **rest): ...
    found = defaults_of(run)
    assert (found["capture"], found["runs"], found["warmup"]) == ("auto", 7, 2)
    assert "model" not in found and "rest" not in found


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_each_option_default_is_the_functions_default(name):
    target, argv, renamed = FUNCTIONS[name]
    parameters = defaults_of(_function(target))
    parsed = vars(build_parser(name).parse_args([name, *argv]))
    flags = {action.dest for action in _sub_parser(name)._actions if action.option_strings}
    checked = {dest: value for dest, value in parsed.items()
               if dest in flags - OWN_DEFAULTS and renamed.get(dest, dest) in parameters}
    assert len(checked) >= 2, checked
    for dest, value in checked.items():
        expected = parameters[renamed.get(dest, dest)]
        assert value == (list(expected) if isinstance(value, list) else expected), dest


def test_profile_arguments_of_no_flags_are_profiles_defaults():
    """What the CLI passes to profile() when the user gives no option is profile()'s own
    default, for every keyword it passes (the parser is the one built from parser_table.py)."""
    from pyfxprof.cli.commands.profile import profile_arguments
    from pyfxprof.run.runner import profile
    parameters = defaults_of(profile)  # flat, or profile()'s option groups flattened
    passed = profile_arguments(build_parser("profile").parse_args(["profile"]))
    assert passed == {name: parameters[name] for name in passed}


def test_every_count_of_runs_is_called_runs():
    for name in COMMAND_MODULES:
        options = _visible_options(name)
        assert not [o for o in options if any(w in o for w in OTHER_RUN_WORDS)], name
        assert ("--runs" in options) == (name in TIMING_COMMANDS), name


@pytest.mark.parametrize("flag", ["--runs", "--rounds"])
def test_overhead_takes_runs_and_its_old_name(flag):
    args = build_parser("overhead").parse_args(["overhead", flag, "10"])
    assert args.runs == 10 and "rounds" not in vars(args)
    assert "--rounds" not in _visible_options("overhead")
    assert "[--rounds" not in _sub_parser("overhead").format_usage()


def test_an_alias_is_hidden_and_sets_the_same_destination():
    parser = argparse.ArgumentParser()
    add_alias(parser, "--iterations", parser.add_argument("--runs", type=int, default=3))
    assert parser.parse_args(["--iterations", "4"]).runs == 4
    assert parser.parse_args([]).runs == 3
    assert "--iterations" not in parser.format_help()


def test_docs_list_every_old_name():
    """docs/cli.md's "Old names" table is every hidden alias: (old, command, new)."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[3] / "docs" / "cli.md").read_text()
    rows = text.split("## Old names")[1].split("|---|---|---|")[1].strip().splitlines()
    documented = {tuple(cell.strip().strip("`").split()[0] for cell in row.strip("|").split("|"))
                  for row in rows}
    hidden = set()
    for name in COMMAND_MODULES:
        actions = _sub_parser(name)._actions
        for action in actions:
            if action.help == argparse.SUPPRESS and action.option_strings:
                new = next(a for a in actions if a.dest == action.dest and a is not action)
                hidden.add((action.option_strings[0], name, new.option_strings[0]))
    assert documented == hidden
