"""Shared fixtures: the fake CUDA runtime library, built once per test session."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAKE_CUDART_SOURCE = ROOT / "csrc" / "tests" / "fake_cudart.cpp"


@pytest.fixture(scope="session")
def fake_cudart(tmp_path_factory) -> Path:
    """Path to a freshly built fake libcudart (see csrc/tests/fake_cudart.cpp)."""
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.fail("a C++ compiler is needed to build the fake CUDA runtime")
    out = tmp_path_factory.mktemp("fake_cudart") / "libfake_cudart.so"
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", str(FAKE_CUDART_SOURCE), "-o", str(out)],
                   check=True)
    return out
