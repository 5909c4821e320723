"""The package's architecture, read off the source (an AST walk of every module's imports).

Stages and the one-way rule (docs/architecture.md, "Stages and their import rule"):

    cli ─▶ run, loop, tools, analyses, views, data        (every stage may import stats)
    run ─▶ timing, capture, analyses, data  timing ─▶ capture, _C
    loop ─▶ run, timing, capture, data      capture ─▶ data (the capture modes)
    tools ─▶ run, loop, timing, capture, views, data
    analyses ─▶ views, data                 views ─▶ data

- ``data`` (the Profile, statistics, persistence), used by run, views, analyses, tools and cli,
  imports no other stage, neither torch nor ``_C``, so a saved profile loads and renders
  anywhere. ``views`` and ``analyses`` import neither torch nor ``_C`` either.
- ``timing`` may use ``capture`` (its executors run captured graphs; capture never imports
  timing). ``errors.py`` is shared by all; ``pyfxprof`` itself (``__version__``) too.
- ``_C`` is imported by ``timing/native.py`` only, the extension's one Python face (its
  surface is ``pyfxprof/_C.pyi``); everything else imports ``_C`` from there.
- No exception, function-level imports included: the plain-data classes' rendering methods
  (``Profile.table``, ``export``, ``plot``, ``advise``, ...) are served by the package root's
  ``_METHODS`` table (``@served_methods``), which names the view or analysis; the root serves
  every stage lazily and is the one module outside the rule (docs/architecture.md).
- No cycle among imports (function-level ones included), and no function body over
  MAX_FUNCTION_LINES lines
  (counted from the first statement, docstring included, to the last line).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pyfxprof"

#: Stages each stage may import (besides itself, "errors" and the package root).
ALLOWED = {
    "stats": set(),
    "data": {"stats"},
    "views": {"data", "stats"},
    "analyses": {"views", "data", "stats"},
    "capture": {"data", "stats"},  # data/rungs.py: the capture modes
    "timing": {"capture", "stats", "_C"},
    "run": {"timing", "capture", "analyses", "data", "stats"},  # analyses: compare() returns a diff
    "loop": {"run", "timing", "capture", "data", "stats"},
    "tools": {"run", "loop", "timing", "capture", "views", "data", "stats"},
    "cli": {"run", "loop", "tools", "analyses", "views", "data", "stats"},
    "errors": set(),
}
#: Stages that must not import torch (nor anything under it).
NO_TORCH = {"stats", "data", "views", "analyses"}

MAX_FUNCTION_LINES = 50


@dataclass(frozen=True)
class Import:
    """One import statement's target module, where it is, and whether it runs at import time."""

    source: str          # importing module, e.g. "pyfxprof.data.profile"
    target: str          # imported module, e.g. "pyfxprof.views.report" or "torch.fx"
    function: str        # qualname of the enclosing function, "" at module level
    type_only: bool      # under ``if TYPE_CHECKING:``
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
NATIVE = {"pyfxprof._C"}  # the compiled extension (no .py source)


def is_module(name: str) -> bool:
    return name in MODULES or name in NATIVE


def resolve(source: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """Modules a ``from X import a, b`` reaches: ``X.a`` where that is a module, else ``X``."""
    if node.level:
        base = source.split(".")[: len(source.split(".")) - node.level + (1 if is_package else 0)]
        base_name = ".".join(base + ([node.module] if node.module else []))
    else:
        base_name = node.module
    targets = {f"{base_name}.{alias.name}" if is_module(f"{base_name}.{alias.name}") else base_name
               for alias in node.names}
    return sorted(targets)


class ImportCollector(ast.NodeVisitor):
    """Every import of one module, with its enclosing function and TYPE_CHECKING status."""

    def __init__(self, source: str, is_package: bool):
        self.source, self.is_package = source, is_package
        self.scope: list[str] = []
        self.functions: list[str] = []
        self.type_only = False
        self.imports: list[Import] = []

    def _add(self, target: str, line: int) -> None:
        function = ".".join(self.scope) if self.functions else ""
        self.imports.append(Import(self.source, target, function, self.type_only, line))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for target in resolve(self.source, self.is_package, node):
            self._add(target, node.lineno)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node) -> None:
        self.scope.append(node.name)
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            self.type_only = True
            for child in node.body:
                self.visit(child)
            self.type_only = False
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)


def parse(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"), filename=str(MODULES[name]))


def all_imports() -> list[Import]:
    found = []
    for name, path in MODULES.items():
        collector = ImportCollector(name, path.name == "__init__.py")
        collector.visit(parse(name))
        found += collector.imports
    return found


IMPORTS = all_imports()


def stage(module: str) -> str | None:
    """The stage of a pyfxprof module ("data", "_C", "errors", ...); "" for the package root
    and ``__main__``; None outside pyfxprof."""
    parts = module.split(".")
    if parts[0] != "pyfxprof":
        return None
    if len(parts) == 1 or parts[1] == "__main__":
        return ""
    return parts[1]


def crosses_the_rule(item: Import) -> bool:
    """True when `item` imports a stage (or torch) its own stage may not use. Imports under
    ``if TYPE_CHECKING:`` follow the same stage rule (a type from a higher stage is a
    dependency on it all the same); only torch may be named there by a torch-free stage, as
    those imports never run."""
    own, other = stage(item.source), stage(item.target)
    if own == "":
        return False  # the package root serves the public names of every stage
    if other is None:
        return own in NO_TORCH and not item.type_only and item.target.split(".")[0] == "torch"
    return other not in {own, "", "errors"} | ALLOWED[own]


def test_every_stage_is_known():
    stages = {stage(name) for name in MODULES} - {""}
    assert stages == set(ALLOWED), \
        "a new subpackage needs its place in ALLOWED (and docs/architecture.md)"


def test_imports_point_one_way():
    """Every import, at module level, inside a function or under TYPE_CHECKING, follows the
    stage rule."""
    wrong = [f"{i.source}:{i.line} imports {i.target}" + (f" (in {i.function})" if i.function
                                                            else "")
             for i in IMPORTS if crosses_the_rule(i)]
    assert wrong == [], "imports against the stage rule (see this file's docstring):\n" + \
        "\n".join(wrong)


def test_no_import_cycle_within_a_stage_type_only_imports_included():
    """Cycles through a type-only import that stay inside one stage (the run/ cycle through
    arguments.py was one)."""
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for item in IMPORTS:
        if item.target in MODULES and stage(item.target) == stage(item.source) \
                and item.target != item.source:
            graph[item.source].add(item.target)
    assert cycles(graph) == []


def test_only_the_native_face_imports_the_extension():
    importers = sorted({i.source for i in IMPORTS if i.target == "pyfxprof._C"})
    assert importers == ["pyfxprof.timing.native"]


def served_classes() -> dict[str, str]:
    """Class name -> module, for every class decorated with ``@served_methods``."""
    found = {}
    for name in MODULES:
        for node in ast.walk(parse(name)):
            if isinstance(node, ast.ClassDef) and any(
                    getattr(d, "id", None) == "served_methods" for d in node.decorator_list):
                assert node.name not in found, f"two served classes named {node.name}"
                found[node.name] = name
    return found


def test_served_methods_come_from_a_stage_above_their_class():
    """Each ``_METHODS`` row names an existing function of another module whose stage may
    import the class's stage (or, for Advice, one its stage may import), and the class
    carries the method (so dir(), help() and tab completion see it)."""
    import importlib

    import pyfxprof
    classes = served_classes()
    assert {"Profile", "RankProfiles", "SweepResult", "Advice"} <= set(classes)
    for key, (module, function) in pyfxprof._METHODS.items():
        owner, method = key.split(".")
        home, target = classes[owner], f"pyfxprof.{module}"
        assert target in MODULES and target != home, key
        assert stage(home) in ALLOWED[stage(target)] | {stage(target)} or (
            stage(target) in ALLOWED[stage(home)]), key
        assert callable(getattr(importlib.import_module(target), function)), key
        assert method in dir(getattr(importlib.import_module(home), owner)), key


def served_stages() -> dict[str, set[str]]:
    """Served method name -> the stages of the modules serving it (``_METHODS``); dunders and
    ``_repr_html_`` are left out (they are called by ``str()`` and notebooks, not by name)."""
    import pyfxprof
    found: dict[str, set[str]] = {}
    for key, (module, _) in pyfxprof._METHODS.items():
        method = key.split(".")[1]
        if not method.startswith("_"):
            found.setdefault(method, set()).add(stage(f"pyfxprof.{module}") or "")
    return found


def upward_calls(name: str, tree: ast.AST, served: dict[str, set[str]]) -> list[str]:
    """Calls in module ``name`` that reach a stage its own may not import at run time: a
    served method called on a name (``profile.advise()`` runs analyses.advisor) whose serving
    stage is not allowed, or ``importlib.import_module("pyfxprof.…")`` of such a stage. By
    name, not type: a method of another class spelled like a served one is caught too (rename
    it)."""
    own = stage(name)
    if not own:
        return []
    allowed = ALLOWED[own] | {own, "errors", ""}
    wrong = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        method = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and (
                method in served):  # on a name (profile.advise(), self.export()): torch's
            # kineto_results.events() is not Profile.events
            if served[method] - allowed:
                wrong.append(f"{name}:{node.lineno} calls .{method}() served by "
                             f"{sorted(served[method] - allowed)}")
        elif method in ("import_module", "__import__") and node.args and isinstance(
                node.args[0], ast.Constant) and str(node.args[0].value).startswith("pyfxprof."):
            if stage(str(node.args[0].value)) not in allowed:
                wrong.append(f"{name}:{node.lineno} imports {node.args[0].value} at run time")
    return wrong


def test_no_upward_call_at_run_time():
    """What the import walk cannot see: a lower stage calling an upper one at run time through
    a served method (views/html_report.py called ``profile.advise()``, analyses, before the
    report received its advice) or a dynamic import. The caller passes what an upper stage
    computes instead (docs/architecture.md)."""
    served = served_stages()
    wrong = [line for name in MODULES for line in upward_calls(name, parse(name), served)]
    assert wrong == [], "lower stages calling upper ones at run time:\n" + "\n".join(wrong)


def test_the_upward_call_check_can_fail():
    """The old views/html_report.py (``advice_html(profile.advise())``), a data module
    rendering itself (``self.export(...)``) and a dynamic import of a view from data."""
    served = served_stages()
    old_report = ast.parse("def html_report(profile):\n    return advice_html(profile.advise())")
    assert upward_calls("pyfxprof.views.html_report", old_report, served) == [
        "pyfxprof.views.html_report:2 calls .advise() served by ['analyses']"]
    wrapper = ast.parse("class Profile:\n    def export_csv(self, path):\n"
                        "        self.export(path, 'csv')")
    assert upward_calls("pyfxprof.data.profile", wrapper, served) == [
        "pyfxprof.data.profile:3 calls .export() served by ['analyses']"]
    dynamic = ast.parse("def f():\n    importlib.import_module('pyfxprof.views.report')")
    assert upward_calls("pyfxprof.data.x", dynamic, served) != []
    assert upward_calls("pyfxprof.cli.x", old_report, served) == []


def import_graph() -> dict[str, set[str]]:
    """pyfxprof module -> pyfxprof modules it imports (at module level or in a function,
    outside TYPE_CHECKING), parent packages included but the package root left out: every
    module is imported through it, and it serves every stage lazily (see the docstring)."""
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for item in IMPORTS:
        if item.type_only or not item.target.startswith("pyfxprof"):
            continue
        parts = item.target.split(".")
        graph[item.source] |= {".".join(parts[:k]) for k in range(1, len(parts) + 1)
                               if ".".join(parts[:k]) in MODULES
                               and ".".join(parts[:k]) not in (item.source, "pyfxprof")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for child in graph.get(node, ()):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in on_stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]] and cycles({"a": {"b"}, "b": set()}) == []


def test_no_dynamic_import_at_module_level():
    """``importlib.import_module`` or ``__import__`` at module level would hide an edge."""
    hidden = []
    for name in MODULES:
        for statement in parse(name).body:
            for node in ast.walk(statement):
                if isinstance(node, ast.Call) and (
                        getattr(node.func, "id", None) in ("import_module", "__import__")
                        or getattr(node.func, "attr", None) == "import_module"):
                    if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.ClassDef)):
                        hidden.append(f"{name}:{node.lineno}")
    assert hidden == []


def function_lengths() -> dict[tuple[str, str], int]:
    """(module, qualname) -> lines of the body, first statement (docstring included) to last."""
    lengths = {}
    for name in MODULES:
        def walk(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    qualname = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        lengths[(name, qualname)] = child.end_lineno - child.body[0].lineno + 1
                    walk(child, qualname + ".")
        walk(parse(name), "")
    return lengths


LENGTHS = function_lengths()


def test_no_function_over_50_lines():
    long = {key: n for key, n in LENGTHS.items() if n > MAX_FUNCTION_LINES}
    assert long == {}, f"split these functions (body lines): {long}"


def test_the_import_walk_sees_what_it_must():
    """The walk resolves relative imports, finds function-local and TYPE_CHECKING imports."""
    by_source = {(i.source, i.target, i.function, i.type_only) for i in IMPORTS}
    assert ("pyfxprof.data.profile", "pyfxprof.data.tail", "Profile.tail", False) in by_source
    assert ("pyfxprof.run.metadata", "pyfxprof.timing.native", "", False) in by_source
    assert ("pyfxprof.run.metadata", "pyfxprof.capture.tracing", "", True) in by_source
    assert crosses_the_rule(Import("pyfxprof.data.x", "pyfxprof.views.report", "", False, 1))
    assert crosses_the_rule(Import("pyfxprof.views.x", "torch.fx", "", False, 1))
    assert not crosses_the_rule(Import("pyfxprof.run.x", "pyfxprof.timing.recorder", "", False, 1))
