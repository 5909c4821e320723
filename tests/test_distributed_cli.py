"""`torchrun --nproc-per-node 2 -m pyfxprof profile MODEL --ranks-out DIR` and `pyfxprof report`
on the gathered file, as real torchrun jobs (gloo on CPU)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import torch

from pyfxprof.cli.main import main
from pyfxprof.data.persist import load_profile
from pyfxprof.data.rank_profiles import load_rank_profiles

ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = Path(sys.executable).with_name("torchrun")
#: Bound on one torchrun job; past it the test fails instead of hanging.
JOB_TIMEOUT_S = 300


def model_failing_on_rank_1() -> torch.nn.Module:
    """A Linear on every rank except rank 1, whose model cannot run."""
    from tests.run.test_distributed import Broken
    return Broken() if os.environ.get("RANK") == "1" else torch.nn.Linear(16, 16)


def torchrun(model: str, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               OMP_NUM_THREADS="1")
    command = [str(TORCHRUN), "--standalone", "--nproc-per-node", "2", "-m", "pyfxprof",
               "profile", model, "--input", "4x16", "--runs", "6", "--warmup", "1",
               "--ranks-out", str(out), "--gather-timeout", "120"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=JOB_TIMEOUT_S)


def test_torchrun_writes_one_file_per_rank_and_the_gathered_file(tmp_path, capsys):
    job = torchrun("tests.run.test_distributed:DataParallelStep", tmp_path)
    assert job.returncode == 0, job.stderr[-2000:]
    ranks = load_rank_profiles(tmp_path / "ranks.json")
    assert ranks.ranks == [0, 1] and ranks.world_size == 2
    for rank in (0, 1):
        alone = load_profile(tmp_path / f"rank_{rank}.json")
        assert alone == ranks.profiles[rank]
        assert alone.meta["distributed"]["rank"] == rank
        assert alone.meta["distributed"]["backend"] == "gloo"
    assert job.stdout.startswith("pyfxprof ranks — DataParallelStep · 2 of 2 ranks profiled")
    assert re.search(r"^wait_tensor_default +comm ", job.stdout, re.MULTILINE)
    assert "\nstragglers" in job.stdout
    assert main(["report", str(tmp_path / "ranks.json"), "--top", "3",
                 "--chrome-trace", str(tmp_path / "t.json"),
                 "--rank-traces", str(tmp_path / "traces")]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("pyfxprof ranks") and "… " in printed
    assert sorted(p.name for p in (tmp_path / "traces").iterdir()) == ["rank_0.json",
                                                                       "rank_1.json"]
    assert main(["report", str(tmp_path / "ranks.json"), "--flamegraph", "f.svg"]) == 2
    assert "--flamegraph renders one profile" in capsys.readouterr().err


def test_torchrun_with_a_failing_rank_reports_it_and_exits_without_hanging(tmp_path):
    job = torchrun("tests.test_distributed_cli:model_failing_on_rank_1", tmp_path)
    assert job.returncode != 0
    assert "pyfxprof: error: rank 1 could not profile" in job.stderr
    assert "pyfxprof: error: ranks [1] could not profile" in job.stderr
    ranks = load_rank_profiles(tmp_path / "ranks.json")
    assert ranks.ranks == [0] and "broken on purpose" in ranks.failures[1]
    assert "rank 1 FAILED" in job.stdout
