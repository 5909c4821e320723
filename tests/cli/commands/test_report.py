import argparse
import json
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from pyfxprof.cli import main as cli
from pyfxprof.cli.commands import report
from pyfxprof.errors import PyfxprofError
from pyfxprof.data.profile import Profile

SAMPLES = np.array([[10, 30, 20], [10, 30, 20], [100, 30, 20]], dtype=np.int64)


@pytest.fixture
def saved(tmp_path):
    nodes = pd.DataFrame({
        "index": [0, 1, 2], "name": ["alpha", "delta", "bravo"],
        "op": ["call_module", "call_function", "call_function"],
        "target": ["alpha", "torch.relu", "operator.add"], "module_path": ["alpha", "", "blk"],
        "module_type": ["Conv2d", "Net", "Block"], "module_stack": [("alpha",), (), ("blk",)]})
    profile = Profile(nodes, SAMPLES, SAMPLES.sum(axis=1), {"model": "toy", "device": "cpu"})
    path = tmp_path / "p.json.gz"
    profile.save(path)
    return path


def run_report(argv):
    parser = argparse.ArgumentParser()
    report.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report"] + [str(a) for a in argv])
    return args.func(args)


def table_names(text):
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line and set(line) <= {"-", " "}) + 1
    return [line.split()[1] for line in lines[start:start + 3] if line.strip()]


def test_prints_the_table(saved, capsys):
    assert run_report([saved]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pyfxprof — toy on cpu")
    # by median (10, 30, 20 ns): alpha's one 100 ns run does not put it first
    assert table_names(out) == ["delta", "bravo", "alpha"]
    assert "rows: by median per run, descending" in out
    run_report([saved, "--sort", "total"])
    assert table_names(capsys.readouterr().out) == ["alpha", "delta", "bravo"]  # 120, 90, 60


def test_sort_top_and_group_by(saved, capsys):
    run_report([saved, "--sort", "name", "--top", "2"])
    out = capsys.readouterr().out
    assert table_names(out)[:2] == ["alpha", "bravo"] and "delta" not in out
    assert "1 more nodes not shown (top=2)" in out
    run_report([saved, "--group-by", "op"])
    assert "call_function" in capsys.readouterr().out


def test_exports(saved, tmp_path, capsys):
    outputs = {"--chrome-trace": tmp_path / "t.json", "--flamegraph": tmp_path / "f.svg",
               "--stacks": tmp_path / "s.txt", "--plot": tmp_path / "p.png",
               "--speedscope": tmp_path / "s.speedscope.json"}
    argv = [saved, "--metric", "max"]
    for flag, path in outputs.items():
        argv += [flag, path]
    assert run_report(argv) == 0
    assert "traceEvents" in json.loads(outputs["--chrome-trace"].read_text())
    ET.parse(outputs["--flamegraph"])
    assert outputs["--stacks"].read_text().splitlines()[0] == "root;alpha 100"
    assert outputs["--plot"].stat().st_size > 0
    speedscope = json.loads(outputs["--speedscope"].read_text())  # --metric max: alpha 100
    assert speedscope["profiles"][-1]["weights"] == [100, 30, 20]
    err = capsys.readouterr().err
    assert f"wrote flame graph to {outputs['--flamegraph']}" in err


def test_html_report_option(saved, tmp_path, capsys):
    assert run_report([saved, "--html", tmp_path / "r.html"]) == 0
    page = (tmp_path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "alpha" in page
    assert f"wrote HTML report to {tmp_path / 'r.html'}" in capsys.readouterr().err


def test_missing_profile_is_a_pyfxprof_error(tmp_path):
    with pytest.raises(PyfxprofError, match="cannot load profile .*nope.json: no such file"):
        run_report([tmp_path / "nope.json"])


def test_through_the_cli_exit_code_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("report",))
    (tmp_path / "foreign.json").write_text('{"traceEvents": []}')
    assert cli.main(["report", str(tmp_path / "foreign.json")]) == 2
    assert "not a pyfxprof profile" in capsys.readouterr().err


def test_rejects_bad_top(saved):
    with pytest.raises(SystemExit):
        run_report([saved, "--top", "0"])
