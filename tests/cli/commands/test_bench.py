"""Tests for `pyfxprof bench` (pyfxprof.cli.commands.bench), run in-process."""

import pytest

from pyfxprof.cli import main as cli


def run(argv, capsys) -> tuple[int, str, str]:
    code = cli.main(["bench", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_one_statement_prints_its_measurement(capsys):
    code, out, _ = run(["torch.add(x, y)", "--setup", "x = torch.randn(1024); y = x",
                        "--budget", "0.1"], capsys)
    assert code == 0
    assert out.startswith("torch.add(x, y): median ")
    assert "per call (95% interval" in out and "calls in" in out


def test_setup_lines_accumulate_and_baseline_is_shown(capsys):
    code, out, _ = run(["x.relu()", "-s", "import torch", "-s", "x = torch.ones(8)",
                        "--baseline", "perf_counter", "--budget", "0.1"], capsys)
    assert code == 0 and "time.time per block" in out


def test_a_grid_prints_one_table(capsys):
    code, out, _ = run(["torch.add(x, x)", "-s", "x = torch.ones(n, dtype=dtype)",
                        "-p", "n=1,64,4096", "-p", "dtype=torch.float32,torch.float64,torch.int32",
                        "--budget", "0.05"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "median per call (pyfxprof.bench)"
    assert lines[1].split() == ["n", "dtype=float32", "dtype=float64", "dtype=int32"]
    assert [line.split()[0] for line in lines[2:5]] == ["1", "64", "4096"]
    assert all(len(line.split()) >= 7 for line in lines[2:5])  # 3 cells of "value unit"


@pytest.mark.parametrize("argv, message", [
    (["torch.add(x,"], "STMT is not valid Python"),
    (["x", "-s", "x = 1/0"], "--setup raised ZeroDivisionError: division by zero"),
    (["x", "-s", "x = 1", "-p", "n"], "--param must be NAME=V1,V2,..."),
    (["x", "-s", "x = 1", "-p", "n=nope"], "--param n: cannot read 'nope' as Python values"),
    (["y", "-s", "x = 1"], "raised on its inputs: NameError"),
])
def test_bad_input_is_one_line(argv, message, capsys):
    code, _, err = run([*argv, "--budget", "0.05"], capsys)
    assert code == 2
    assert message in err and err.count("\n") == 1
