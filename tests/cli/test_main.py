"""Tests of pyfxprof.cli.main: the sub-command table, lazy registration, exit codes."""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pyfxprof

from pyfxprof.cli.commands import report as report_command
from pyfxprof.cli.main import COMMAND_MODULES, PIPE_CLOSED, build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def registered(parser: argparse.ArgumentParser) -> set[str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(action.choices)


def test_every_command_module_is_registered_without_a_command():
    assert registered(build_parser()) == set(COMMAND_MODULES)
    assert registered(build_parser("--help")) == set(COMMAND_MODULES)
    assert registered(build_parser("not-a-command")) == set(COMMAND_MODULES)


def test_only_the_command_being_run_is_registered():
    for name in COMMAND_MODULES:
        assert registered(build_parser(name)) == {name}


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in COMMAND_MODULES)


def test_unknown_or_missing_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["frobnicate"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2


def test_pyfxprof_errors_are_one_line_with_exit_code_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pyfxprof: error: ") and err.count("\n") == 1
    assert "no such file" in err


def test_interrupt_exits_130_and_the_command_exit_code_is_returned(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(report_command, "run", interrupted)
    assert main(["report", "p.json"]) == 130
    assert capsys.readouterr().err == "pyfxprof: interrupted\n"
    monkeypatch.setattr(report_command, "run", lambda args: 3)
    assert main(["report", "p.json"]) == 3
    monkeypatch.setattr(report_command, "run", lambda args: None)
    assert main(["report", "p.json"]) == 0


def test_other_exceptions_are_not_swallowed(monkeypatch):
    def broken(args):
        raise ValueError("a bug")
    monkeypatch.setattr(report_command, "run", broken)
    with pytest.raises(ValueError, match="a bug"):
        main(["report", "p.json"])


def test_python_dash_m_runs_the_command_line():
    result = subprocess.run([sys.executable, "-m", "pyfxprof", "report", "missing.json"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.startswith("pyfxprof: error: ") and "missing.json" in result.stderr


def test_a_reader_that_closes_the_pipe_early_gets_no_traceback(tmp_path):
    """`pyfxprof report big.json | head`: a table longer than the pipe's buffer, its reader
    gone before it is written, ends the command with the shell's SIGPIPE code, nothing on
    stderr."""
    import torch
    model = torch.nn.Sequential(*[torch.nn.ReLU() for _ in range(300)])
    pyfxprof.profile(model, (torch.ones(2),), runs=2, warmup=1, progress=False).save(
        tmp_path / "big.json")
    process = subprocess.Popen([sys.executable, "-m", "pyfxprof", "report",
                                str(tmp_path / "big.json")], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # before the interpreter has started: the writes fail
    _, errors = process.communicate(timeout=300)
    assert process.returncode == PIPE_CLOSED, errors.decode()
    assert errors == b""


def test_warnings_are_one_line_while_a_command_runs_and_restored_after(capsys, monkeypatch):
    import warnings

    from pyfxprof.cli import main as cli_main

    def warn_twice(args):
        warnings.warn("pyfxprof: fell back\n  to hooks", UserWarning)
        warnings.warn("deprecated thing", DeprecationWarning)
        return 0
    monkeypatch.setattr(cli_main, "build_parser", lambda command: _Parsed(warn_twice))
    before = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert cli_main.main(["anything"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "pyfxprof: warning: fell back to hooks"
    assert lines[1].startswith("DeprecationWarning (") and lines[1].endswith("): deprecated thing")
    assert len(lines) == 2 and warnings.showwarning is before


class _Parsed:
    """A parser whose parse_args gives args running `func`."""

    def __init__(self, func):
        self.func = func

    def parse_args(self, argv):
        import argparse
        return argparse.Namespace(func=self.func)


def test_a_command_missing_from_the_table_is_registered_from_its_module(monkeypatch):
    """A command merged without regenerating cli/parser_table.py still runs (test_parsers.py fails
    until the table is written)."""
    from pyfxprof.cli import parser_table
    monkeypatch.setattr(parser_table, "COMMANDS", {k: v for k, v in parser_table.COMMANDS.items()
                                                 if k != "report"})
    args = build_parser("report").parse_args(["report", "p.json", "--top", "3"])
    assert args.top == 3 and args.func is report_command.run


def test_the_program_ends_after_its_exit_handlers_and_output_with_the_commands_code(tmp_path):
    """With torch loaded the program skips the interpreter's teardown (cli.main._exit_now):
    the atexit handlers (here, the model module's) still run, the output and the saved file
    are complete, and the exit code is the command's."""
    (tmp_path / "tiny_model.py").write_text(
        "import atexit, pathlib, torch\n"
        "atexit.register(pathlib.Path('handler_ran').write_text, 'yes')\n"
        "def build():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n")
    command = [sys.executable, "-m", "pyfxprof", "profile", "tiny_model:build", "--input", "2x4",
               "--runs", "3", "--warmup", "1", "--save", "p.json"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "handler_ran").read_text() == "yes"
    rows = [line.split()[1] for line in result.stdout.splitlines() if line[:3].strip().isdigit()]
    assert rows == ["_0", "_1"] and result.stderr.endswith("wrote profile to p.json\n")
    assert pyfxprof.load(tmp_path / "p.json").n_runs == 3
    failed = subprocess.run(command[:-2] + ["--runs", "0"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"})
    assert failed.returncode == 2 and "runs must be a positive integer" in failed.stderr


def test_a_daemon_thread_does_not_keep_the_program_from_ending_at_once(tmp_path):
    """A daemon thread (tqdm's monitor, which torch.fx's Interpreter starts in the analysis
    run) is stopped at exit either way: the program still skips the interpreter's teardown,
    whose finalizers would otherwise run (here, a model module's object's __del__). Its
    --timings start with the interpreter's start and add up to at most the process's wall
    time, measured here."""
    (tmp_path / "daemon_model.py").write_text(
        "import pathlib, threading, time, torch\n"
        "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
        "class Finalized:\n"
        "    def __del__(self):\n"
        "        pathlib.Path('torn_down').write_text('yes')\n"
        "kept = Finalized()\n"
        "def build():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())\n")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    torn_down = subprocess.run(  # the finalizer runs at a normal exit: the check can fail
        [sys.executable, "-c", "import daemon_model"], cwd=tmp_path, env=env, timeout=600)
    assert torn_down.returncode == 0 and (tmp_path / "torn_down").exists()
    (tmp_path / "torn_down").unlink()
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pyfxprof", "profile", "daemon_model:build",
                             "--input", "2x4", "--runs", "3", "--warmup", "1", "--timings"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    wall = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "torn_down").exists()
    from pyfxprof.run.wall_clock import LABELS
    shown = [line.strip() for line in result.stderr.splitlines() if line.startswith("  ")]
    assert shown[0].rsplit(None, 1)[0] == LABELS["start"]
    assert 0 < float(shown[0].split()[-1]) and float(shown[-1].split()[1]) <= wall
