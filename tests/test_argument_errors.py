"""Caller mistakes raise ArgumentError (a PyfxprofError, ValueError and TypeError) in one line
naming the argument; CLI mistakes are one line, never a traceback."""

import pytest
import torch

import pyfxprof
from pyfxprof.cli.main import main
from pyfxprof.errors import ArgumentError, PyfxprofError
from tests.data.test_persist import make_profile

MODEL = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
X = (torch.randn(2, 4),)


def _profile(model=MODEL, **options):
    return pyfxprof.profile(model, X, runs=2, warmup=0, progress=False, **options)


CASES = {
    "sort_by": lambda p: p.table(sort_by="zz"),
    "top": lambda p: p.table(top=-1),
    "max_depth": lambda p: p.tree(max_depth=-1),
    "metric": lambda p: p.export_flamegraph("unused.svg", metric="zz"),
    "runs": lambda p: p.export_chrome_trace("unused.json", runs=[99]),
    "path": lambda p: pyfxprof.load(None),
    "path ": lambda p: pyfxprof.load(5),
    "path  ": lambda p: pyfxprof.load(b'{"format": 1}'),
    "model": lambda p: pyfxprof.fuse_conv_bn(None),
    "columns": lambda p: p.table(columns=5),
    "width": lambda p: p.table(width=-5),
    "width ": lambda p: p.table(width="x"),
    "row_limit": lambda p: p.table(row_limit="x"),
    "max_runs": lambda p: p.export_chrome_trace("t.json", max_runs="x"),
    "max_runs ": lambda p: p.export_chrome_trace("t.json", max_runs=0),
    "path   ": lambda p: p.save(None),
    "rules": lambda p: p.advise(rules=5),
    "leaf_modules": lambda p: _profile(leaf_modules=None),
    "autowrap_functions": lambda p: _profile(autowrap_functions="torch.relu"),
    "device": lambda p: _profile(device="foo"),
    "device ": lambda p: _profile(device="meta"),
    "TorchScript": lambda p: _profile(torch.jit.script(MODEL)),
    "TorchScript ": lambda p: _profile(torch.jit.trace(MODEL, X)),
    "TorchScript  ": lambda p: pyfxprof.Profiler(torch.jit.script(MODEL)),
    "row_limit ": lambda p: p.key_averages().table(row_limit=2.5),
    "row_limit  ": lambda p: p.key_averages().table(row_limit="3"),
    "group_by_stack_n": lambda p: p.key_averages(group_by_stack_n="3"),
    "metric ": lambda p: p.export("x.json", metric="median"),
    "bogus": lambda p: p.export("x.csv", bogus=1),
    "loss_fn": lambda p: _profile(backward=True, loss_fn=5),
}


@pytest.mark.parametrize("argument", sorted(CASES))
def test_one_line_naming_the_argument(argument, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArgumentError) as info:
        CASES[argument](make_profile())
    message = str(info.value)
    assert argument.strip() in message and "\n" not in message
    assert isinstance(info.value, (PyfxprofError, ValueError, TypeError))
    assert list(tmp_path.iterdir()) == []  # nothing written by a refused call


@pytest.mark.parametrize("argv, expected", [
    (["--input", "99999999999999999999999x16"], "more than 1e+12; use a smaller shape"),
    (["--threads", "100000"], "--threads 100000 is more than 1024"),
    (["--device", "meta"], "device 'meta' runs no operations"),
    (["--ranks-out", "existing"], "--ranks-out existing: File exists"),
    (["--backward"], "no parameter of this model (nor any input) requires grad"),
])
def test_cli_mistakes_are_one_line(argv, expected, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "existing").write_text("keep")
    code = main(["profile", "torch.nn:ReLU", "--input", "2x4", "--runs", "2", "--warmup", "0",
                 *argv])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "Traceback" not in err, err
    assert (tmp_path / "existing").read_text() == "keep"


def test_rank_traces_of_a_single_profile_says_so(tmp_path, capsys):
    make_profile().save(tmp_path / "p.json")
    assert main(["report", str(tmp_path / "p.json"), "--rank-traces", str(tmp_path / "t")]) == 2
    assert "is one profile: use --chrome-trace" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()
