"""Shared fixtures: the fake CUDA runtime and the fake NVTX tool, each built once per test
session; torch on one thread for a test that asks (`one_thread`)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
FAKE_CUDART_SOURCE = ROOT / "csrc" / "tests" / "fake_cudart.cpp"
FAKE_NVTX_SOURCE = ROOT / "csrc" / "tests" / "fake_nvtx_injection.cpp"


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """pyfxprof's cache (measured machine peaks) in a folder of the test session's own: the tests
    neither read the user's ~/.cache/pyfxprof (a profile's meta would depend on it) nor write it."""
    previous = os.environ.get("PYFXPROF_CACHE_DIR")
    os.environ["PYFXPROF_CACHE_DIR"] = str(tmp_path_factory.mktemp("pyfxprof_cache"))
    yield
    if previous is None:
        os.environ.pop("PYFXPROF_CACHE_DIR", None)
    else:
        os.environ["PYFXPROF_CACHE_DIR"] = previous


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


@pytest.fixture(scope="session")
def fake_nvtx_tool(tmp_path_factory) -> Path:
    """Path to a freshly built fake NVTX tool (csrc/tests/fake_nvtx_injection.cpp), compiled
    against the NVTX headers pyfxprof._C was built with; skips when it was built without."""
    from pyfxprof.timing.native import _C
    if not _C.nvtx_built:
        pytest.skip("pyfxprof._C was built without the NVTX v3 headers")
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.fail("a C++ compiler is needed to build the fake NVTX tool")
    out = tmp_path_factory.mktemp("fake_nvtx") / "libfake_nvtx_injection.so"
    subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-isystem", _C.nvtx_include_dir,
                    str(FAKE_NVTX_SOURCE), "-o", str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def inductor_cache(tmp_path_factory):
    """Inductor's on-disk caches in the using module's own temporary directory, one thread
    (the compiled-model tests: `pytestmark = pytest.mark.usefixtures("inductor_cache")`)."""
    before, threads = os.environ.get("TORCHINDUCTOR_CACHE_DIR"), torch.get_num_threads()
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("inductor"))
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
    if before is None:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    else:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = before


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Runs a test marked ``@pytest.mark.timing`` up to ``attempts`` times (default 3) until its
    assertions hold once.

    Such a test compares what pyfxprof measured with a known truth (a busy-wait of known length).
    On a shared 2-core machine another process can take the CPU for milliseconds in any run, so one
    attempt can miss by chance; a real error in the timing misses in every attempt. Only
    AssertionError is retried: any other exception fails at once.
    """
    marker = pyfuncitem.get_closest_marker("timing")
    if marker is None:
        return None
    attempts = marker.kwargs.get("attempts", 3)
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    missed = []
    for attempt in range(1, attempts + 1):
        try:
            pyfuncitem.obj(**arguments)
        except AssertionError as error:
            if attempt == attempts:
                raise
            missed.append(f"attempt {attempt} missed: {' '.join(str(error).split())[:300]}")
        else:
            if missed:
                pyfuncitem.add_report_section("call", "timing", "\n".join(
                    [f"held on attempt {attempt} of {attempts}"] + missed))
            return True
    return True


@pytest.fixture
def one_thread():
    """Torch on one intra-op thread for the test, the count restored after. With as many threads
    as cores on a shared machine a parallel op waits for a scheduler time slice whenever
    another process holds a core: its time is the scheduler's, not the op's
    (docs/roofline.md, "How the known truths are measured")."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
