"""Tests of `pyfxprof profile` and `pyfxprof overhead` through the CLI entry point."""

import re
import subprocess
import sys

import pytest

from pyfxprof.cli.main import main
from tests.fixtures_models import SMALL_INPUT

SPEC = "tests.fixtures_models:conv_bn_relu"


def test_profile_prints_the_table(capsys):
    code = main(["profile", SPEC, "--input", SMALL_INPUT, "--runs", "3", "--warmup", "1",
                 "--sort", "order"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("pyfxprof — conv_bn_relu on cpu · 3 runs (1 warmup) · mode codegen")
    rows = [line.split()[1] for line in out.splitlines() if line[:2].strip().isdigit()]
    assert rows == ["conv", "bn", "relu"]


def test_group_by_top_mode_and_threads(capsys):
    code = main(["profile", SPEC, "--input", SMALL_INPUT, "--runs", "2", "--warmup", "0",
                 "--group-by", "module_type", "--top", "2", "--mode", "interpreter",
                 "--threads", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "mode interpreter" in out and "threads 1" in out
    assert "1 more" in out  # three module types, two shown


@pytest.mark.parametrize("argv, message", [
    (["profile", "nowhere:Net"], "cannot import 'nowhere'"),
    (["profile", SPEC, "--input", "2x5x16x16"], "node 'conv' (call_module conv) failed on inputs"),
    (["profile", SPEC, "--runs", "0"], "runs must be a positive integer"),
])
def test_bad_input_is_one_line_and_exit_code_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pyfxprof: error: ") and message in err and "\n" not in err


def test_untraceable_model_falls_back_and_the_header_says_why(capsys):
    code = main(["profile", "tests.models:DataDependent", "--input", "3", "--runs", "2",
                 "--warmup", "0"])
    out, err = capsys.readouterr()
    assert not [line for line in err.splitlines() if line.startswith("pyfxprof: warning: ")]
    assert code == 0 and "capture dynamo" in out and "(between graphs)" in out
    assert "capture: fx: torch.fx cannot trace DataDependent" in out


def test_python_dash_m_runs_the_cli():
    result = subprocess.run([sys.executable, "-m", "pyfxprof", "profile", "--help"],
                            capture_output=True, text=True, check=True)
    assert "--group-by" in result.stdout


def test_both_call_sites_pass_every_profile_option(monkeypatch):
    """--ranks-out used to drop --granularity: both call sites build profile()'s keywords with
    profile_arguments, so each option reaches profile() from either."""
    import argparse

    from pyfxprof.cli.commands import profile as command
    seen = []
    monkeypatch.setattr(command, "model_and_inputs", lambda args, **_: ("model", ("x",), "name"))
    monkeypatch.setattr(command, "profile", lambda model, inputs, **kwargs: seen.append(kwargs))
    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers())
    argv = ["profile", "--granularity", "aten", "--capture", "dynamo", "--mode", "interpreter",
            "--runs", "7", "--warmup", "2", "--profile-memory", "--library-frames", "--nvtx",
            "--no-alone"]
    command._profile_or_error(parser.parse_args(argv + ["--ranks-out", "out"]))
    monkeypatch.setattr(command, "print_table", lambda *a: None)
    monkeypatch.setattr(command, "print_latency", lambda *a: None)
    monkeypatch.setattr(command, "write_exports", lambda *a: None)
    command.run(parser.parse_args(argv))
    expected = {"runs": 7, "warmup": 2, "mode": "interpreter", "device": None,
                "capture": "dynamo", "granularity": "aten", "name": "name", "compile": None,
                "backward": False, "profile_memory": True, "library_frames": True, "nvtx": True,
                "alone": False}
    assert seen[0] == dict(expected, progress=False) and seen[1] == expected


def test_profile_memory_shows_allocations_per_node(capsys):
    code = main(["profile", SPEC, "--input", SMALL_INPUT, "--runs", "2", "--warmup", "0",
                 "--sort", "order", "--profile-memory"])
    lines = capsys.readouterr().out.splitlines()
    header = next(k for k, line in enumerate(lines) if line.startswith("#"))
    titles = lines[header]
    assert code == 0 and "CPU alloc" in titles and "CPU peak" in titles
    end = titles.index("CPU alloc") + len("CPU alloc")  # cells are right-aligned to titles
    cells = {line.split()[1]: line[:end].split()[-1] for line in lines[header + 2:header + 5]}
    assert cells["conv"].endswith("kB")  # its output at least: 2x8x16x16 float32, 16.4 kB
    assert float(cells["conv"][:-2]) >= 16.384 and cells["relu"] == "16.4kB"  # not in place
    code = main(["profile", SPEC, "--input", SMALL_INPUT, "--runs", "2", "--warmup", "0"])
    assert code == 0 and "CPU alloc" not in capsys.readouterr().out


def test_alone_times_the_nodes_named_and_a_saved_profile_reports_them(capsys, tmp_path):
    saved = tmp_path / "p.json"
    code = main(["profile", SPEC, "--input", SMALL_INPUT, "--runs", "2", "--warmup", "0",
                 "--alone", "bn,relu", "--save", str(saved)])
    out = capsys.readouterr().out
    titles = next(line for line in out.splitlines() if line.startswith("#"))
    assert code == 0 and "Alone" in titles and "Row/alone" in titles
    cells = {line.split()[1]: line for line in out.splitlines() if line[:2].strip().isdigit()}
    ratio = re.compile(r" \d+\.\d\dx ")  # the Row/alone cell, on the rows timed alone only
    assert ratio.search(cells["bn"]) and ratio.search(cells["relu"])
    assert not ratio.search(cells["conv"])
    assert main(["report", str(saved)]) == 0
    assert "Row/alone" in capsys.readouterr().out
    code = main(["profile", SPEC, "--input", SMALL_INPUT, "--runs", "2", "--warmup", "0",
                 "--no-alone"])
    assert code == 0 and "Row/alone" not in capsys.readouterr().out


@pytest.mark.parametrize("command", ["fuse", "overhead"])
def test_commands_without_programs_refuse_them_in_one_line(capsys, command):
    assert main([command, "tests.exported_models:mlp_module", "--input", "64x512"]) == 2
    err = capsys.readouterr().err.strip()
    assert "gives a torch.export program, which this command does not take" in err
    assert "\n" not in err


def test_timings_break_the_wall_time_down_on_stderr(capsys):
    from pyfxprof.run.wall_clock import LABELS
    code = main(["profile", SPEC, "--input", SMALL_INPUT, "--runs", "3", "--warmup", "1",
                 "--timings"])
    captured = capsys.readouterr()
    assert code == 0 and "wall time" not in captured.out
    shown = [line.strip() for line in captured.err.splitlines() if line.startswith("  ")]
    expected = [label for name, label in LABELS.items() if name != "start"]  # in-process:
    assert [line.rsplit(None, 1)[0] for line in shown[:-1]] == expected  # no interpreter start
    steps = [float(line.split()[-1]) for line in shown[:-1]]
    assert abs(float(shown[-1].split()[1]) - sum(steps)) <= 0.0005 * len(steps)  # rounding


def test_profile_of_more_than_1024_runs_prints_the_table(capsys):
    """1,024 runs and more once ended in a traceback (an OverflowError in an interval)."""
    code = main(["profile", "torch.nn:ReLU", "--input", "2x4", "--runs", "1500", "--warmup", "1",
                 "--threads", "1"])
    out = capsys.readouterr().out
    assert code == 0 and "1500 runs" in out.splitlines()[0]
    assert "relu" in [line.split()[1] for line in out.splitlines() if line[:2].strip().isdigit()]
