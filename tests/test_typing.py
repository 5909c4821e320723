"""What static tools see of the public API (docs/architecture.md, "The package root serves names
and methods lazily"): the package root's TYPE_CHECKING imports are its ``_PUBLIC`` table, each
served method's typed declaration (in its class body, under TYPE_CHECKING) is the serving
function's signature, mypy passes on the package and on the README's and docs' examples with
no ``Any`` where users look, pyright passes on the package where it can run, and jedi
completes and finds the served methods.

mypy runs once per session (the ``mypy_run`` fixture, about 20 s of CPU cold; its cache in
``.mypy_cache`` makes later runs a few seconds); pyright too (``pyright_run``, about 25 s), and
only where the pyright package and Node.js, which it runs on, are installed.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pyfxprof
from tests.test_docs_examples import DOCS, python_blocks

ROOT = Path(__file__).resolve().parents[1]
MYPY_TIMEOUT_S = 900
PYRIGHT_TIMEOUT_S = 900


def type_checking_block(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements under ``if TYPE_CHECKING:`` among ``body`` (a module's or a class's)."""
    return [child for node in body if isinstance(node, ast.If)
            and getattr(node.test, "id", None) == "TYPE_CHECKING" for child in node.body]


def test_the_root_imports_every_public_name_for_static_tools():
    """``from .data.profile import Profile as Profile`` under TYPE_CHECKING for each _PUBLIC row
    (so mypy, pyright and jedi resolve ``pyfxprof.profile``), each deprecated name as its new
    name's row, and nothing else."""
    tree = ast.parse((ROOT / "pyfxprof" / "__init__.py").read_text(encoding="utf-8"))
    declared = {alias.asname: (node.module, alias.name)
                for node in type_checking_block(tree.body) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    deprecated = {old: pyfxprof._PUBLIC[new] for old, new in pyfxprof._DEPRECATED.items()}
    assert declared == {**pyfxprof._PUBLIC, **deprecated}


def class_node(owner: str) -> tuple[str, ast.ClassDef]:
    """(module, class definition) of the served class named ``owner``: the class decorated
    with ``@served_methods`` in any module of the package."""
    for path in sorted((ROOT / "pyfxprof").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == owner and any(
                    ast.unparse(d) == "served_methods" for d in node.decorator_list):
                return ".".join(path.relative_to(ROOT / "pyfxprof").with_suffix("").parts), node
    raise AssertionError(f"no served class {owner}")


def signature_text(function: ast.FunctionDef) -> tuple[list[tuple], str]:
    """Each parameter after the first (name, kind, annotation) and the return annotation."""
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    params = [(a.arg, "positional", ast.unparse(a.annotation) if a.annotation else None)
              for a in positional[1:]]
    params += [(a.arg, "keyword", ast.unparse(a.annotation) if a.annotation else None)
               for a in arguments.kwonlyargs]
    for star, kind in ((arguments.vararg, "*"), (arguments.kwarg, "**")):
        if star is not None:
            params.append((star.arg, kind, ast.unparse(star.annotation) if star.annotation
                           else None))
    return params, ast.unparse(function.returns) if function.returns else "None"


def declared_defaults(function: ast.FunctionDef) -> dict[str, object]:
    """Parameter name -> default of a declaration (literals: the declarations spell values)."""
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    names = [a.arg for a in positional[len(positional) - len(arguments.defaults):]]
    found = {name: ast.literal_eval(d) for name, d in zip(names, arguments.defaults)}
    found.update({a.arg: ast.literal_eval(d) for a, d in zip(arguments.kwonlyargs,
                                                             arguments.kw_defaults) if d})
    return found


def served_declarations() -> dict[str, ast.FunctionDef]:
    """"Class.method" -> its declaration under TYPE_CHECKING in the class body."""
    found = {}
    for owner in sorted({key.split(".")[0] for key in pyfxprof._METHODS}):
        _, node = class_node(owner)
        for child in type_checking_block(node.body):
            assert isinstance(child, ast.FunctionDef), ast.unparse(child)
            found[f"{owner}.{child.name}"] = child
    return found


def test_each_served_method_is_declared_with_the_serving_functions_signature():
    """Parameters (names, kinds, annotations as written), defaults (equal values) and the
    return annotation of each declaration are the serving function's, first parameter
    (the instance) aside; every declaration has its _METHODS row and every row its
    declaration."""
    declarations = served_declarations()
    assert sorted(declarations) == sorted(pyfxprof._METHODS)
    for key, (module, name) in pyfxprof._METHODS.items():
        function = getattr(importlib.import_module(f"pyfxprof.{module}"), name)
        served = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
        assert isinstance(served, ast.FunctionDef)
        assert signature_text(declarations[key]) == signature_text(served), key
        real = {p.name: p.default for p in list(inspect.signature(function).parameters.values())
                [1:] if p.default is not inspect.Parameter.empty}
        assert declared_defaults(declarations[key]) == real, key


def test_the_declaration_check_sees_a_drift():
    declaration = ast.parse("def table(self, top: int = 5) -> str: ...").body[0]
    served = ast.parse("def profile_table(profile, top: int | None = 5) -> str: ...").body[0]
    assert isinstance(declaration, ast.FunctionDef) and isinstance(served, ast.FunctionDef)
    assert signature_text(declaration) != signature_text(served)
    assert declared_defaults(declaration) == {"top": 5}


#: reveal_type targets that must not be Any (what a typed user calls first).
REVEALED = {
    "pyfxprof.profile": "def (model:",
    "pyfxprof.load": "def (path:",
    "prof.table": "def (sort_by:",
    "prof.export": "def (path:",
    "prof.table()": "str",
    "pyfxprof.diff(prof, prof).table": "def (sort_by:",  # or a CompiledDiff's table
    "pyfxprof.Profiler": "def (",
    "pyfxprof.bench": "def (",
}


def examples_script() -> str:
    """The ```python blocks of README.md and docs/*.md, one function per file (blocks in order,
    as test_docs_examples runs them), and the reveal_type checks."""
    parts = ["# mypy: allow-redefinition", "from __future__ import annotations",
             "import pyfxprof", ""]
    for path in DOCS:
        blocks = [block.code for block in python_blocks(path)]
        if blocks:
            name = re.sub(r"\W", "_", path.stem.lower())
            body = textwrap.indent("\n".join(blocks), "    ")
            parts += [f"def example_{name}() -> None:  # {path.relative_to(ROOT)}", body, ""]
    parts += ["def revealed(prof: pyfxprof.Profile) -> None:"]
    parts += [f"    reveal_type({target})" for target in REVEALED]
    return "\n".join(parts) + "\n"


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory) -> subprocess.CompletedProcess:
    """mypy (pyproject.toml's [tool.mypy]) on the package and the examples script at once."""
    script = tmp_path_factory.mktemp("typing") / "typing_examples.py"
    script.write_text(examples_script(), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "mypy", "pyfxprof", str(script)], cwd=ROOT,
                          capture_output=True, text=True, timeout=MYPY_TIMEOUT_S)


def test_mypy_passes_on_the_package_and_the_docs_examples(mypy_run):
    errors = [line for line in mypy_run.stdout.splitlines() if ": error:" in line]
    assert errors == [], "\n".join(errors)
    assert mypy_run.returncode == 0, mypy_run.stdout + mypy_run.stderr


def test_what_users_call_first_is_not_any(mypy_run):
    revealed = [line.split('Revealed type is "', 1)[1].rstrip('"')
                for line in mypy_run.stdout.splitlines() if "Revealed type is" in line]
    assert len(revealed) == len(REVEALED), mypy_run.stdout
    for (target, start), text in zip(REVEALED.items(), revealed):
        assert start in text and text != "Any" and not text.endswith("-> Any"), (target, text)


@pytest.fixture(scope="module")
def pyright_run() -> subprocess.CompletedProcess:
    """pyright (pyproject.toml's [tool.pyright]: standard rules, the package) with this
    interpreter's packages; skipped without the pyright package or without Node.js."""
    pytest.importorskip("pyright")
    if shutil.which("node") is None:  # the wrapper would download Node.js
        pytest.skip("pyright runs on Node.js: no `node` on PATH")
    return subprocess.run([sys.executable, "-m", "pyright", "--outputjson", "--pythonpath",
                           sys.executable], cwd=ROOT, capture_output=True, text=True,
                          timeout=PYRIGHT_TIMEOUT_S)


@pytest.mark.slow
def test_pyright_passes_on_the_package(pyright_run):
    report = json.loads(pyright_run.stdout)
    errors = [f"{Path(d['file']).relative_to(ROOT)}:{d['range']['start']['line'] + 1}: "
              f"{d['message'].splitlines()[0]}" for d in report["generalDiagnostics"]
              if d["severity"] == "error"]
    assert errors == [], f"{len(errors)} pyright errors:\n" + "\n".join(errors)
    sources = [*ROOT.joinpath("pyfxprof").rglob("*.py"), *ROOT.joinpath("pyfxprof").rglob("*.pyi")]
    assert report["summary"]["filesAnalyzed"] == len(sources), report["summary"]


def test_jedi_completes_and_finds_the_served_methods():
    """An editor's view: completion on a Profile lists ``table`` and ``export``; go-to-
    definition on ``p.table`` lands on its declaration in data/profile.py."""
    jedi = pytest.importorskip("jedi")
    code = "import pyfxprof\np = pyfxprof.load('x.json')\np.\n"
    script = jedi.Script(code, path=ROOT / "example.py", project=jedi.Project(ROOT))
    names = {c.name for c in script.complete(3, 2)}
    assert {"table", "export", "advise", "save", "stats"} <= names
    found = jedi.Script(code.replace("p.\n", "p.table\n"), path=ROOT / "example.py",
                        project=jedi.Project(ROOT)).goto(3, 4)
    assert [(Path(d.module_path).relative_to(ROOT).as_posix(), d.name) for d in found] == [
        ("pyfxprof/data/profile.py", "table")]
