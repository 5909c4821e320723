import argparse

import pytest
import torch

from pyfxprof.cli import main as cli
from pyfxprof.cli.commands import ab as ab_command

FAST = ["--input", "4x16", "--blocks", "6", "--max-blocks", "6", "--runs-per-block", "1",
        "--warmup", "1", "--seed", "0"]


def wider():
    return torch.nn.Linear(16, 8)


def run_ab(*argv):
    parser = argparse.ArgumentParser()
    ab_command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["ab", *argv])
    return args.func(args)


def test_prints_an_interleaved_table_and_passes_the_gate_on_a_a(capsys):
    code = run_ab("torch.nn:ReLU", "torch.nn:ReLU", *FAST, "--fail-on-regression", "50%")
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("pyfxprof diff — ReLU (ReLU, 6 runs) vs ReLU (2) (ReLU, 6 runs)")
    assert "interleaved A/B, 6 paired blocks of 4 pairs of copies: each row" in out  # default
    assert "no significant slowdown >= 50%" in out


def test_one_copy_each_when_asked(capsys):
    run_ab("torch.nn:ReLU", "torch.nn:ReLU", *FAST, "--copies", "1")
    assert "interleaved A/B, 6 paired blocks: each row against" in capsys.readouterr().out


def test_outputs_of_another_shape_are_one_line(capsys):
    assert cli.main(["ab", "torch.nn:ReLU", "tests.cli.commands.test_ab:wider", *FAST]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pyfxprof: error: the models' outputs differ: control returns "
                          "[(4, 16) float32], test returns [(4, 8) float32]")
    assert err.count("\n") == 1


def test_depth_needs_module_grouping():
    with pytest.raises(Exception, match="--depth needs --group-by module"):
        run_ab("torch.nn:ReLU", "torch.nn:ReLU", *FAST, "--depth", "1")


def test_the_gate_note_on_sessions_is_not_printed_for_interleaved_runs(capsys):
    run_ab("torch.nn:ReLU", "torch.nn:ReLU", *FAST, "--fail-on-regression", "0%")
    assert "one session per side" not in capsys.readouterr().out
