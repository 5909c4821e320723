"""Tests for `pyfxprof fuse` (pyfxprof.cli.commands.fuse), run in-process on tests/fixtures_models.py."""

import argparse
from pathlib import Path

import pytest
from tests.fixtures_models import SMALL_INPUT

from pyfxprof.cli import main as cli
from pyfxprof.cli.commands import fuse
from pyfxprof.errors import PyfxprofError

CONV_BN_RELU = "tests.fixtures_models:conv_bn_relu"


@pytest.fixture(autouse=True)
def repo_root_on_path(monkeypatch):
    """Model specs say `tests.fixtures_models:...`: make the repo root importable (plain
    `pytest` puts only tests/ on sys.path; `python -m pytest` also adds the cwd)."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3]))


def parse(argv):
    parser = argparse.ArgumentParser(prog="pyfxprof")
    fuse.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["fuse", *argv])


def run_failing(argv, capsys) -> str:
    """The one-line error of a failing `pyfxprof fuse ARGV` (through cli.main once registered)."""
    if "fuse" in cli.COMMAND_MODULES:
        assert cli.main(["fuse", *argv]) == 2
        return capsys.readouterr().err
    with pytest.raises(PyfxprofError) as error:
        fuse.run(parse(argv))
    return str(error.value)


def test_defaults():
    args = parse([])
    assert (args.model, args.input, args.bench, args.runs, args.warmup, args.threads) == (
        "pyfxprof.cli.default_model:resnet18", None, False, 30, 5, None)
    assert args.func is fuse.run


def test_fuse_prints_report_and_difference(capsys):
    assert fuse.run(parse([CONV_BN_RELU, "--input", SMALL_INPUT])) == 0
    out = capsys.readouterr().out
    assert "Conv/BatchNorm fusion: 1 fused, 0 skipped" in out
    assert "fused    conv + bn" in out
    assert "max abs difference, fused vs original, on inputs [(2, 3, 16, 16)]: " in out
    assert float(out.rsplit(": ", 1)[1]) < 1e-4


def test_bench_prints_pair_and_speedup_table(capsys):
    argv = [CONV_BN_RELU, "--input", SMALL_INPUT, "--bench", "--runs", "3", "--warmup", "1"]
    assert fuse.run(parse(argv)) == 0
    out = capsys.readouterr().out
    assert "fused    conv + bn" in out
    assert "speed-up" in out and "max abs diff" in out
    assert "3 runs (+1 warmup)" in out
    assert [line.split()[0] for line in out.splitlines() if line.endswith(tuple("0123456789"))
            and line.split()[0] in ("unfused", "fused", "fused+script")] == [
        "unfused", "fused", "fused+script"]


def test_unsafe_pair_is_reported_as_skipped(capsys):
    assert fuse.run(parse(["tests.fixtures_models:ConvBNResidual", "--input", SMALL_INPUT])) == 0
    out = capsys.readouterr().out
    assert "0 fused, 1 skipped" in out
    assert "skipped  conv + bn: the conv output is also used by add" in out


@pytest.mark.parametrize("argv, message", [
    (["no_such_package.models:net"], "cannot import 'no_such_package.models'"),
    (["tests.fixtures_models"], "must look like 'package.module:callable'"),
    (["tests.fixtures_models:broken_factory"], "this factory always fails"),
    ([CONV_BN_RELU, "--input", "2x5x16x16"], "pass matching --input shapes"),
    ([CONV_BN_RELU, "--input", "2by3"], "is not a shape like 5x3x224x224"),
])
def test_bad_input_is_a_one_line_error(argv, message, capsys):
    text = run_failing(argv, capsys).strip()
    assert message in text
    assert "\n" not in text and "Traceback" not in text


def test_bad_counts_are_refused_by_the_parser(capsys):
    for argv in (["--runs", "0"], ["--warmup", "-1"], ["--threads", "x"]):
        with pytest.raises(SystemExit) as stop:
            parse(argv)
        assert stop.value.code == 2
    assert "expected an integer >= 1, got 'x'" in capsys.readouterr().err
