"""Tests of the package itself: its lazily served public names, and that a saved profile loads,
renders and reports with the native extension (and torch) blocked."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import pyfxprof
from tests.models import Net, net_input

ROOT = Path(__file__).resolve().parents[1]

#: The public API: these names stay exactly as they are (docs/architecture.md, "The package root").
PUBLIC = {"profile", "Profile", "load", "diff", "ProfileDiff", "Profiler", "ProfilerAction",
          "schedule", "record_range", "ProfilingInterpreter", "fuse_conv_bn", "FusionError",
          "FusionReport", "max_abs_difference", "FusionBenchmark", "benchmark_fusion", "advise",
          "Advice", "Suggestion", "register_rule", "PyfxprofError"}
PUBLIC |= {"bench", "bench_grid", "BenchGrid", "Measurement"}  # microbenchmarks (docs/bench.md)

#: Run first in a subprocess: a meta-path finder that makes importing these modules fail.
BLOCKER = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in BLOCKED or name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is blocked by the test")
        return None
sys.meta_path.insert(0, Blocker())
"""


def run_blocked(code: str, blocked=("pyfxprof._C", "torch")) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter (cwd: the repository) with `blocked` unimportable."""
    script = BLOCKER.format(blocked=set(blocked)) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_public_names_are_exactly_the_documented_ones_and_all_resolve():
    assert set(pyfxprof.__all__) >= PUBLIC
    assert set(pyfxprof.__all__) <= set(dir(pyfxprof))
    for name in pyfxprof.__all__:
        assert getattr(pyfxprof, name) is not None
    assert pyfxprof.load is pyfxprof.data.persist.load_profile
    assert pyfxprof.record_range is pyfxprof.loop.ranges.Range
    assert callable(pyfxprof.profile) and callable(pyfxprof.diff) and callable(pyfxprof.schedule)


@pytest.mark.parametrize("old, new", sorted(pyfxprof._DEPRECATED.items()))
def test_deprecated_names_warn_naming_the_new_one_and_stay_out_of_all(old, new):
    for _ in range(2):  # warns at every use, not only the first
        with pytest.warns(DeprecationWarning, match=rf"pyfxprof\.{old} is deprecated.*"
                                                   rf"use pyfxprof\.{new}$"):
            value = getattr(pyfxprof, old)
        assert value is getattr(pyfxprof, new)
    assert old not in pyfxprof.__all__ and new in pyfxprof.__all__
    namespace: dict = {}
    exec("from pyfxprof import *", namespace)
    assert old not in namespace and new in namespace


def test_star_import_does_not_shadow_builtins():
    import builtins
    assert not set(pyfxprof.__all__) & set(dir(builtins))


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        pyfxprof.not_a_name  # noqa: B018
    assert not hasattr(pyfxprof, "_C_typo")


def test_import_pyfxprof_imports_neither_torch_nor_the_extension():
    result = run_blocked("""
        import sys, pyfxprof
        assert "torch" not in sys.modules and "pyfxprof._C" not in sys.modules
        assert sorted(m for m in sys.modules if m.startswith("pyfxprof")) == ["pyfxprof"]
        print(pyfxprof.__version__)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == pyfxprof.__version__


def test_needing_the_extension_says_it_is_missing_when_blocked():
    result = run_blocked("import pyfxprof; pyfxprof.profile", blocked=("pyfxprof._C",))
    assert result.returncode != 0 and "pyfxprof._C is blocked by the test" in result.stderr


@pytest.fixture(scope="module")
def saved_profile(tmp_path_factory) -> tuple[Path, pyfxprof.Profile]:
    prof = pyfxprof.profile(Net(), (net_input(),), runs=3, warmup=1, progress=False)
    path = tmp_path_factory.mktemp("saved") / "net.json.gz"
    prof.save(path)
    return path, prof


def test_a_saved_profile_loads_and_renders_with_the_extension_and_torch_blocked(saved_profile,
                                                                               tmp_path):
    path, prof = saved_profile
    result = run_blocked(f"""
        import sys, pyfxprof
        prof = pyfxprof.load({str(path)!r})
        print(prof.table(top=5))
        print(prof.tree())
        prof.export_chrome_trace({str(tmp_path / "trace.json")!r})
        prof.export_flamegraph({str(tmp_path / "flame.svg")!r})
        prof.export_speedscope({str(tmp_path / "p.speedscope.json")!r})
        print(prof.advise())
        assert "torch" not in sys.modules and "pyfxprof._C" not in sys.modules
    """)
    assert result.returncode == 0, result.stderr
    assert prof.table(top=5) in result.stdout
    assert (tmp_path / "trace.json").stat().st_size > 0
    assert (tmp_path / "flame.svg").read_text().startswith("<?xml")
    assert (tmp_path / "p.speedscope.json").read_text().startswith('{"$schema"')


def test_the_report_command_runs_with_the_extension_and_torch_blocked(saved_profile, tmp_path):
    path, prof = saved_profile
    result = run_blocked(f"""
        import runpy, sys
        sys.argv = ["pyfxprof", "report", {str(path)!r}, "--top", "3",
                    "--stacks", {str(tmp_path / "stacks.txt")!r}]
        try:
            runpy.run_module("pyfxprof", run_name="__main__")
        finally:
            assert "torch" not in sys.modules and "pyfxprof._C" not in sys.modules
    """)
    assert result.returncode == 0, result.stderr
    assert prof.table(top=3) in result.stdout
    assert "wrote folded stacks" in result.stderr and (tmp_path / "stacks.txt").exists()


def test_served_methods_reach_direct_importers_of_the_data_class_and_help():
    """``from pyfxprof.data.profile import Profile`` alone: the view behind ``table`` is
    imported on the method's first use, and help()/dir() show the served methods."""
    result = run_blocked("""
        import pydoc, sys
        import numpy as np, pandas as pd
        from pyfxprof.data.profile import Profile
        assert "table" in dir(Profile) and "export" in dir(Profile)
        assert not [m for m in sys.modules if m.startswith(("pyfxprof.views", "pyfxprof.analyses"))]
        nodes = pd.DataFrame({"index": [0], "name": ["x"], "op": ["call_function"],
                              "target": ["add"], "module_path": [""], "module_type": ["M"],
                              "module_stack": [()]})
        prof = Profile(nodes, np.array([[5]]), np.array([5]))
        print(prof.table(columns=["name", "median"], width=None).splitlines()[-1])
        assert "pyfxprof.views.report" in sys.modules
        text = pydoc.render_doc(Profile, renderer=pydoc.plaintext)
        assert "table = profile_table(profile, sort_by" in text
        assert "export(profile: 'Profile', path: 'PathLike', format" in text
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["x", "5", "ns"]


def test_a_method_both_defined_and_served_is_refused():
    with pytest.raises(TypeError, match="Profile.table is both defined and served"):
        pyfxprof.served_methods(type("Profile", (), {"table": lambda self: None}))
