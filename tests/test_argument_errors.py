"""Caller mistakes raise ArgumentError (a PyfxprofError, ValueError and TypeError) in one line
naming the argument; CLI mistakes are one line, never a traceback. Every numeric argument of the
public API, fuzzed over its whole range (0, negative, huge, fractional, NaN, inf, bool, None,
a string), works or says why in one line."""

import math
import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


#: Every kind of number a caller may pass by mistake: zero, negative, huge, fractional, NaN,
#: infinite, a bool, a numeric string, None (an integer range around the edges too).
NUMBERS = st.one_of(st.integers(-3, 3), st.sampled_from(
    [10**30, 2**63, -2**63, 10**12, 0.5, 2.5, -1.5, 1e300, math.nan, math.inf, -math.inf,
     True, False, None, "3", 1 + 0j, np.int64(2), np.float64(0.99)]))
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
#: Each numeric argument of a Profile's and a diff's public methods, called on small ones.
VIEW_CALLS = {
    "top": lambda p, v: p.table(top=v),
    "row_limit": lambda p, v: p.table(row_limit=v),
    "depth": lambda p, v: p.table(depth=v, group_by="module"),
    "width": lambda p, v: p.table(width=v),
    "max_depth": lambda p, v: p.tree(max_depth=v),
    "quantile": lambda p, v: p.tail(quantile=v),
    "top ": lambda p, v: p.python_outside(top=v),
    "group_by_stack_n": lambda p, v: p.key_averages(group_by_stack_n=v),
    "row_limit ": lambda p, v: p.key_averages().table(row_limit=v),
    "max_runs": lambda p, v: p.export_chrome_trace("t.json", max_runs=v),
    "rank": lambda p, v: p.export_chrome_trace("t.json", rank=v, world_size=4),
    "world_size": lambda p, v: p.export_chrome_trace("t.json", world_size=v),
    "min_change": lambda p, v: pyfxprof.diff(p, p, min_change=v).table(),
    "alpha": lambda p, v: pyfxprof.diff(p, p, alpha=v).table(),
    "min_runs": lambda p, v: pyfxprof.diff(p, p, min_runs=v).table(),
    "top  ": lambda p, v: pyfxprof.diff(p, p).table(top=v),
    "depth ": lambda p, v: pyfxprof.diff(p, p).ops_diff(depth=v),
}


def _works_or_says_why(call):
    """`call()` either returns or raises PyfxprofError in one line: never an error from
    inside (OverflowError, ZeroDivisionError, IndexError, a bare TypeError...)."""
    try:
        call()
    except PyfxprofError as error:
        assert str(error) and "\n" not in str(error), repr(error)


@pytest.mark.parametrize("argument", sorted(VIEW_CALLS))
@FUZZ
@given(value=NUMBERS)
def test_every_numeric_argument_of_the_views_works_or_says_why(argument, value, tmp_path_factory):
    folder = tmp_path_factory.mktemp("views")
    profile = make_profile(runs=12)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        _works_or_says_why(lambda: VIEW_CALLS[argument](profile, value))
    finally:
        os.chdir(cwd)


#: Each numeric argument of the calls that run a model, with values a test can afford to run
#: when they are valid (a huge count is refused or would run for days: see NUMBERS' use below).
MODEL_CALLS = {
    "runs": lambda v: pyfxprof.profile(TINY, TINY_X, runs=v, warmup=0, progress=False),
    "warmup": lambda v: pyfxprof.profile(TINY, TINY_X, runs=2, warmup=v, progress=False),
    "blocks": lambda v: pyfxprof.compare(TINY, TINY, TINY_X, blocks=v, runs_per_block=1,
                                         warmup=0, progress=False),
    "runs_per_block": lambda v: pyfxprof.compare(TINY, TINY, TINY_X, blocks=2, warmup=0,
                                                 runs_per_block=v, progress=False),
    "min_change": lambda v: pyfxprof.compare(TINY, TINY, TINY_X, blocks=2, runs_per_block=1,
                                             warmup=0, min_change=v, progress=False),
    "alpha": lambda v: pyfxprof.compare(TINY, TINY, TINY_X, blocks=2, runs_per_block=1,
                                        warmup=0, alpha=v, progress=False),
    "precision": lambda v: pyfxprof.compare(TINY, TINY, TINY_X, blocks=2, runs_per_block=1,
                                            warmup=0, precision=v, max_blocks=3,
                                            progress=False),
    "target": lambda v: pyfxprof.bench(torch.add, *TINY_X, TINY_X[0], target=v, budget=0.05),
    "budget": lambda v: pyfxprof.bench(torch.add, *TINY_X, TINY_X[0], budget=v),
    "threads": lambda v: pyfxprof.bench(torch.add, *TINY_X, TINY_X[0], budget=0.05, threads=v),
    "keep_profiles": lambda v: _profiler_steps(keep_profiles=v),
    "skip_first": lambda v: _profiler_steps(schedule=pyfxprof.schedule(skip_first=v, wait=0,
                                                                        warmup=0, active=1)),
    "wait": lambda v: _profiler_steps(schedule=pyfxprof.schedule(wait=v, warmup=0, active=1)),
    "active": lambda v: _profiler_steps(schedule=pyfxprof.schedule(wait=0, warmup=0,
                                                                    active=v)),
    "repeat": lambda v: _profiler_steps(schedule=pyfxprof.schedule(wait=0, warmup=0, active=1,
                                                                    repeat=v)),
    "sizes": lambda v: pyfxprof.sweep(TINY, lambda n: (torch.ones(n, 2),), sizes=[1, v],
                                      runs=2, warmup=0, progress=False),
}
#: Arguments whose huge valid values take that long to run (they are counts of runs or
#: seconds): fuzzed with the small and the malformed values only.
AFFORDABLE_ONLY = {"warmup", "blocks", "runs_per_block", "budget", "threads", "sizes"}
TINY = torch.nn.Sequential(torch.nn.ReLU())
TINY_X = (torch.ones(2),)


def _profiler_steps(**options):
    """Three steps of the Profiler loop around TINY with `options`."""
    with pyfxprof.Profiler(TINY, **options) as profiler:
        for _ in range(3):
            TINY(*TINY_X)
            profiler.step()


@pytest.mark.parametrize("argument", sorted(MODEL_CALLS))
@FUZZ
@given(value=NUMBERS)
def test_every_numeric_argument_of_the_model_calls_works_or_says_why(argument, value):
    huge = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) > 1e6
    if argument in AFFORDABLE_ONLY and huge and value > 0:
        return
    _works_or_says_why(lambda: MODEL_CALLS[argument](value))
