"""NVTX ranges per node (timing/nvtx.py): what a tool attached through NVTX_INJECTION64_PATH sees."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pyfxprof
from pyfxprof.errors import PyfxprofError
from pyfxprof.timing.native import _C
from pyfxprof.timing.nvtx import name_ranges, nvtx_available

ROOT = Path(__file__).resolve().parents[2]

#: Profiles a two-Linear MLP with nvtx=True (eager, compiled or in a Profiler block) in a fresh
#: process, so that NVTX loads the fake tool named in its environment at its first call.
SCRIPT = """
import json, sys, torch, pyfxprof
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
x = torch.randn(4, 8)
how = sys.argv[1]
if how == "loop":
    with pyfxprof.Profiler(model, nvtx=True) as p:
        for _ in range(3):
            model(x)
    prof = p.profiles[0]
elif how == "compiled":
    prof = pyfxprof.profile(torch.compile(model), (x,), runs=3, warmup=1, progress=False, nvtx=True)
else:
    prof = pyfxprof.profile(model, (x,), runs=3, warmup=1, progress=False, nvtx=True)
if how == "then_plain":
    pyfxprof.profile(model, (x,), runs=3, warmup=1, progress=False)
print(json.dumps({"rows": len(prof.nodes), "runs": prof.n_runs}))
"""


def ranges_seen(tool: Path, tmp_path: Path, how: str) -> tuple[dict, list[str]]:
    """(what the script printed, the fake tool's event lines) of one profile in a subprocess."""
    log = tmp_path / f"nvtx_{how}.log"
    env = dict(os.environ, NVTX_INJECTION64_PATH=str(tool), FAKE_NVTX_LOG=str(log),
               PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", SCRIPT, how], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), log.read_text().splitlines()


def _graph_runs(runs: int) -> int:
    """The graph runs of an eager profile() of `runs` runs: its warm-up run, its runs and the
    calls around the graph paired with its plain calls (ceil(runs / 2), run.user_call)."""
    return 1 + runs + -(-runs // 2)


def test_each_timed_call_is_a_range_named_by_op_and_module(fake_nvtx_tool, tmp_path):
    printed, events = ranges_seen(fake_nvtx_tool, tmp_path, "eager")
    pushes = [line.split("\t", 1)[1] for line in events if line.startswith("push pyfxprof\t")]
    pops = [line for line in events if line == "pop pyfxprof"]
    assert len(pushes) == len(pops)
    assert pushes == ["Linear · 0", "ReLU · 1", "Linear · 2"] * _graph_runs(printed["runs"])


def test_compiled_kernel_calls_are_ranges_too(fake_nvtx_tool, tmp_path):
    printed, events = ranges_seen(fake_nvtx_tool, tmp_path, "compiled")
    pushes = [line.split("\t", 1)[1] for line in events if line.startswith("push pyfxprof\t")]
    assert pushes and len(pushes) == sum(line == "pop pyfxprof" for line in events)
    assert len(pushes) % (printed["runs"] + 1) == 0  # the same ranges in every run
    assert any("extern_kernels.addmm" in name or "addmm" in name for name in pushes)


def test_the_profiler_loop_pushes_ranges_for_its_recorded_calls(fake_nvtx_tool, tmp_path):
    printed, events = ranges_seen(fake_nvtx_tool, tmp_path, "loop")
    pushes = [line.split("\t", 1)[1] for line in events if line.startswith("push pyfxprof\t")]
    assert printed["runs"] >= 1 and len(pushes) == sum(line == "pop pyfxprof" for line in events)
    # the loop's Dynamo graph: function nodes (torch's linear and relu) at the modules' paths
    ops, paths = zip(*(push.split(" · ") for push in pushes[:3]))
    assert paths == ("0", "1", "2") and ["linear" in ops[0], "relu" in ops[1],
                                         "linear" in ops[2]] == [True] * 3, pushes[:3]
    assert len(pushes) % 3 == 0 and len(pushes) // 3 >= printed["runs"]


def test_a_later_profile_without_nvtx_pushes_no_ranges(fake_nvtx_tool, tmp_path):
    """The second profile() reuses the cached capture and executor: its ranges are reset."""
    printed, events = ranges_seen(fake_nvtx_tool, tmp_path, "then_plain")
    pushes = [line for line in events if line.startswith("push pyfxprof\t")]
    assert len(pushes) == 3 * _graph_runs(printed["runs"])  # the first profile's runs only


def test_a_table_refuses_a_wrong_number_of_names():
    if not _C.nvtx_built:
        pytest.skip("built without NVTX headers")
    with pytest.raises(ValueError, match="one name per column"):
        _C.SampleTable(2).set_ranges(["only one"])


def test_executors_without_native_calls_refuse_nvtx_in_one_line():
    class Hooks:
        mode = "hooks"
    with pytest.raises(PyfxprofError, match="nvtx=True needs nodes timed by native calls"):
        name_ranges(Hooks(), ["a"])
    name_ranges(Hooks(), None)  # nothing to reset


def test_availability_names_the_headers_or_says_how_to_get_them():
    available, why = nvtx_available()
    assert ("NVTX v3 headers from" in why) if available else ("rebuild pyfxprof" in why)
