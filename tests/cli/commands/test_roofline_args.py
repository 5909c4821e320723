"""Tests of `pyfxprof profile --roofline`: the peaks measured once and cached, the roofline's
columns in the node table, its header line, the peaks kept by --save."""

import torch

import pyfxprof
from pyfxprof.cli.main import main
from pyfxprof.run import machine_peaks as peaks_module
from pyfxprof.run.peaks_cache import CACHE_ENV, cache_path
from tests.fixtures_models import SMALL_INPUT

SPEC = "tests.fixtures_models:conv_bn_relu"


def test_roofline_adds_its_columns_and_measures_the_peaks_once(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    real, calls = peaks_module.measure_peaks, []
    monkeypatch.setattr(peaks_module, "measure_peaks",
                        lambda device: calls.append(device) or real(device, (torch.float32,)))
    argv = ["profile", SPEC, "--input", SMALL_INPUT, "--runs", "3", "--warmup", "1",
            "--sort", "order", "--roofline", "--save", str(tmp_path / "p.json")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "roofline: peaks measured" in out and "triad" in out
    lines = out.splitlines()  # the roofline's line among the header's, after the title
    at = next(i for i, line in enumerate(lines) if line.startswith("roofline: peaks"))
    assert lines[0].startswith("pyfxprof — ") and lines[at + 1].startswith("rows:")
    titles = next(line for line in out.splitlines() if line.lstrip().startswith("#"))
    for column in ("flops_all", "bytes", "intensity", "bound", "efficiency", "headroom"):
        assert column in titles
    rows = [line.split() for line in out.splitlines() if line[:2].strip().isdigit()]
    assert [row[1] for row in rows] == ["conv", "bn", "relu"]
    assert all(any(word in ("compute", "memory", "overhead") for word in row) for row in rows)
    assert len(calls) == 1 and cache_path().exists()
    saved = pyfxprof.load(tmp_path / "p.json")
    assert saved.meta["machine_peaks"]["key"] == saved.roofline().attrs["peaks"]["key"]
    assert main(argv) == 0 and len(calls) == 1  # cached: measured once per machine
    capsys.readouterr()


def test_roofline_with_group_by_says_where_the_modules_are(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    real = peaks_module.measure_peaks
    monkeypatch.setattr(peaks_module, "measure_peaks",
                        lambda device: real(device, (torch.float32,)))
    assert main(["profile", SPEC, "--input", SMALL_INPUT, "--runs", "2", "--warmup", "0",
                 "--roofline", "--group-by", "module_type"]) == 0
    assert "prof.roofline(group_by='module')" in capsys.readouterr().out
