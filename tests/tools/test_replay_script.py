"""Tests for pyfxprof.tools.replay_script: the script runs in a fresh interpreter that cannot
import pyfxprof and prints the recorded shapes and a median."""

import os
import subprocess
import sys

import pytest
import torch
from torch import nn

import pyfxprof


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8, eps=1e-3)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = torch.flatten(self.bn(self.conv(x)).mean((2, 3), keepdim=True), 1)
        return self.fc(y).transpose(0, 1)


def run_fresh(script: str, tmp_path) -> str:
    """Run the script in an isolated interpreter (-I: no PYTHONPATH, no user site, so not the
    repository) in which importing pyfxprof fails."""
    path = tmp_path / "node.py"
    path.write_text(script)
    env = {"PATH": os.environ.get("PATH", "/usr/bin"), "HOME": str(tmp_path)}
    blocked = ("import runpy, sys; sys.modules['pyfxprof'] = None  # any import of it fails\n"
               f"runpy.run_path({str(path)!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-I", "-c", blocked], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def prof():
    return pyfxprof.profile(Net().eval(), (torch.randn(2, 3, 16, 16),), runs=2, warmup=1)


@pytest.mark.parametrize("node", ["conv", "bn", "flatten", "transpose"])
def test_the_script_runs_without_pyfxprof_and_prints_shapes_and_a_median(prof, node, tmp_path):
    script = prof.replay_script(node)
    assert "pyfxprof" not in script.replace("pyfxprof's replay_script", "")
    out = run_fresh(script, tmp_path)
    assert "median " in out and f"threads {prof.meta['threads']}" in out and " us over " in out
    row = prof.nodes[prof.nodes["name"] == node].iloc[0]
    shape = row["input_shapes"].strip("()").split("]")[0].strip("[")
    assert f"(({shape})" in out, (shape, out)
