"""pyfxprof/capture/torch_compat.py's probes against the installed torch, the import-time refusal
of a torch below the supported range, and the metadata's bounds against what CI tests."""

import functools
import re
import subprocess
import sys
import tomllib

import pytest
import torch
from torch.fx.graph import CodeGen

import pyfxprof
from pyfxprof.capture.torch_compat import (exported_input_check, fn_def_keywords,
                                           isolated_compile_keywords, known_config,
                                           original_backend, undecorated)

ROOT = pyfxprof.__file__.rsplit("/pyfxprof/", 1)[0]


def _plain(x):
    return x + 1


@pytest.mark.parametrize("layers", [0, 1, 3])
def test_undecorated_unwraps_one_functools_wraps(layers):
    function = _plain
    for _ in range(layers):
        function = functools.wraps(function)(lambda *a, f=function: f(*a))
    assert undecorated(function) is (_plain if layers <= 1 else function.__wrapped__)
    assert undecorated(function)(1) == 2


@pytest.mark.parametrize("expanded_def", [False, True])
def test_fn_def_keywords_are_taken_by_this_torchs_codegen(expanded_def):
    text = CodeGen().gen_fn_def(["self", "x"], "", **fn_def_keywords(expanded_def))
    assert text.replace("\n", "").replace(" ", "").startswith("defforward(self,x")


def test_isolated_compile_keywords_are_taken_by_this_torchs_compile():
    compiled = torch.compile(torch.nn.ReLU(), backend="eager", **isolated_compile_keywords())
    x = torch.randn(3)
    assert torch.equal(compiled(x), torch.relu(x))


@pytest.mark.parametrize("module", ["torch._dynamo.config", "torch._inductor.config"])
@pytest.mark.parametrize("unknown", ["no_such_setting", "trace.no_such_setting"])
def test_known_config_keeps_the_settings_torch_has(module, unknown):
    import importlib
    config = importlib.import_module(module)
    known = next(name for name in ("verbose", "debug") if hasattr(config, name))
    kept = known_config(module, {known: getattr(config, known), unknown: 1})
    assert kept == {known: getattr(config, known)}
    with config.patch(kept):
        assert getattr(config, known) == kept[known]


@pytest.mark.parametrize("backend, inductor", [("inductor", True), ("eager", False)])
def test_original_backend_ends_the_chain_of_dynamos_wrappers(backend, inductor):
    compiled = torch.compile(torch.nn.ReLU(), backend=backend)
    found = original_backend(compiled.dynamo_ctx.callback)
    assert isinstance(found, torch._TorchCompileInductorWrapper) == inductor
    assert not hasattr(found, "_torchdynamo_orig_backend")


@pytest.mark.parametrize("width, fits", [(2, True), (3, False), (1, False)])
def test_exported_input_check_refuses_what_the_program_does_not_take(width, fits):
    module = torch.export.export(torch.nn.Linear(2, 2), (torch.zeros(1, 2),)).module()
    check = functools.partial(exported_input_check(), module, (torch.zeros(1, width),), {})
    if fits:
        check()
    else:
        with pytest.raises(Exception, match="shape"):
            check()


def _import_with_torch(version: str, tmp_path) -> subprocess.CompletedProcess:
    """`import pyfxprof` in a fresh interpreter that sees torch's metadata as `version`."""
    info = tmp_path / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-c", "import pyfxprof"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=60)


@pytest.mark.parametrize("version", ["1.13.1", "2.2.2", "2.7.1+cu126", "2.7.0a0+git1234"])
def test_a_torch_below_the_range_is_refused_in_one_line_at_import(version, tmp_path):
    run = _import_with_torch(version, tmp_path)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr == (f"UnsupportedTorch: pyfxprof needs torch>=2.8, found torch {version}: "
                          "upgrade it (pip install 'torch>=2.8')\n")


@pytest.mark.parametrize("version", ["2.8.0", "2.11.0+cu130", "2.15.0.dev20260101", "3.0.0"])
def test_a_torch_in_the_range_imports_silently(version, tmp_path):
    run = _import_with_torch(version, tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")


def test_the_metadatas_lower_bounds_are_the_oldest_the_compat_stage_tests():
    project = tomllib.loads(open(f"{ROOT}/pyproject.toml").read())["project"]
    stage = open(f"{ROOT}/scripts/compat_stage.sh").read()
    pairs = re.search(r'pairs="\$\{PYFXPROF_COMPAT_PAIRS:-([^}]*)\}"', stage).group(1).split()
    release = lambda version: tuple(int(part) for part in version.split("."))  # noqa: E731
    oldest_torch = min((p.split("-")[0] for p in pairs), key=release)
    oldest_python = min((p.split("-")[1] for p in pairs), key=release)
    assert f"torch>={'.'.join(map(str, pyfxprof.TORCH_MINIMUM))}" in project["dependencies"]
    assert oldest_torch.startswith(".".join(map(str, pyfxprof.TORCH_MINIMUM)) + ".")
    assert project["requires-python"] == f">={oldest_python}"
    assert f"Programming Language :: Python :: {oldest_python}" in project["classifiers"]
    assert "torch<" not in str(project["dependencies"])  # no upper cap
