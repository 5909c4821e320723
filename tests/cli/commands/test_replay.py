"""Tests for `pyfxprof replay` (pyfxprof.cli.commands.replay), run in-process on
tests/fixtures_models.py: profiled now or read from a saved profile, variants, the script."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tests.fixtures_models import SMALL_INPUT, conv_bn_relu

import pyfxprof
from pyfxprof.cli import main as cli

CONV_BN_RELU = "tests.fixtures_models:conv_bn_relu"


@pytest.fixture(autouse=True)
def repo_root_on_path(monkeypatch):
    """Model specs say `tests.fixtures_models:...`: make the repo root importable."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3]))


def first_conv(model_spec_input) -> str:
    prof = pyfxprof.profile(conv_bn_relu(), (torch.randn(*map(int, SMALL_INPUT.split("x"))),),
                            runs=2, warmup=1)
    return prof.nodes.loc[prof.nodes["module_type"] == "Conv2d", "name"].iloc[0]


def test_replay_profiles_then_prints_the_node_and_its_variants(capsys, tmp_path):
    node = first_conv(SMALL_INPUT)
    script = tmp_path / "node.py"
    assert cli.main(["replay", CONV_BN_RELU, node, "--input", SMALL_INPUT, "--runs", "3",
                     "--budget", "1", "--variants", "channels_last,threads=1",
                     "--script", str(script)]) == 0
    out = capsys.readouterr().out
    assert f"replay of {node}" in out and "in graph" in out and "warm" in out
    assert "channels_last" in out and "threads=1" in out and f"wrote {script}" in out
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and "median " in done.stdout, done.stderr[-1000:]


def test_replay_reads_a_saved_profile_with_the_model_given(capsys, tmp_path):
    node = first_conv(SMALL_INPUT)
    saved = tmp_path / "p.json"
    assert cli.main(["profile", CONV_BN_RELU, "--input", SMALL_INPUT, "--runs", "3",
                     "--save", str(saved)]) == 0
    capsys.readouterr()
    assert cli.main(["replay", CONV_BN_RELU, node, "--input", SMALL_INPUT, "--profile",
                     str(saved), "--cache", "both", "--budget", "1"]) == 0
    out = capsys.readouterr().out
    assert "cold" in out and ("matches " in out or "nearest " in out)


def test_an_unknown_node_is_one_line(capsys):
    assert cli.main(["replay", CONV_BN_RELU, "nowhere", "--input", SMALL_INPUT,
                     "--runs", "2"]) == 2
    err = capsys.readouterr().err
    assert "no node 'nowhere'" in err and len(err.strip().splitlines()) == 1
