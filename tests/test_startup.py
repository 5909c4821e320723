"""Start-up cost: what `pyfxprof --help`, `pyfxprof COMMAND --help` and a forward fx profile
load (each in a fresh interpreter, read off sys.modules). Times are in benchmarks/bench_import.py."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pyfxprof.cli.main import COMMAND_MODULES

ROOT = Path(__file__).resolve().parents[1]

#: Loaded only on the paths that use them: compiled models, Dynamo captures, training, scipy's
#: statistics.
MACHINERY = ("torch._dynamo", "torch._functorch.aot_autograd", "torch._inductor", "sympy",
             "triton", "scipy", "pyfxprof.run.training", "pyfxprof.timing.aot_backward")


def loaded_after(code: str, names) -> list[str]:
    """Which of `names` a fresh interpreter has loaded after running `code`."""
    script = f"{code}\nimport json, sys\nprint(json.dumps([n for n in {list(names)!r} " \
             "if n in sys.modules]), file=sys.stderr)"
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stderr.strip().splitlines()[-1])


def test_help_of_the_command_line_and_of_every_command_imports_no_torch():
    runs = "\n".join(f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass"
                     for argv in [["--help"]] + [[name, "--help"] for name in COMMAND_MODULES])
    code = f"import contextlib, io\nfrom pyfxprof.cli.main import main\n" \
           f"with contextlib.redirect_stdout(io.StringIO()):\n{runs}"
    heavy = ("torch", "numpy", "pandas", "scipy", "pyfxprof._C", "pyfxprof.cli.commands.profile")
    assert loaded_after(code, heavy) == []


@pytest.mark.parametrize("render", [False, True])
def test_a_forward_fx_profile_loads_no_compiler_training_or_scipy(render):
    code = ("import torch, pyfxprof\n"
            "model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),\n"
            "                            torch.nn.ReLU(), torch.nn.Flatten())\n"
            "prof = pyfxprof.profile(model, (torch.randn(2, 3, 8, 8),), runs=3, warmup=1,\n"
            "                        progress=False)\n"
            "assert prof.meta['capture_mode'] == 'fx' and prof.meta['flops'] > 0\n"
            + ("text = prof.table()\n" if render else ""))
    assert loaded_after(code, MACHINERY) == []
