"""pyfxprof/_C.pyi against the built extension: the same public names, the same parameters
(names, order, which have defaults) as the bindings' signatures say, the same class members."""

import ast
import inspect
import re
from pathlib import Path

from pyfxprof.timing.native import _C

STUB = Path(__file__).resolve().parents[1] / "pyfxprof" / "_C.pyi"
SIGNATURE = re.compile(r"^\s*(?P<name>\w+)\((?P<params>.*?)\)")


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def stub_params(function: ast.FunctionDef) -> list[str]:
    """Parameter names, "=" appended where there is a default; self left out."""
    args = function.args
    plain = args.posonlyargs + args.args
    defaults = [None] * (len(plain) - len(args.defaults)) + list(args.defaults)
    names = [a.arg + ("=" if d is not None else "") for a, d in zip(plain, defaults)]
    names += ["*" + args.vararg.arg] if args.vararg else []
    names += ["**" + args.kwarg.arg] if args.kwarg else []
    return [n for n in names if n != "self"]


def native_params(obj) -> list[str] | None:
    """The same, read from the first line of a binding's docstring; None when it has none."""
    match = SIGNATURE.match((obj.__doc__ or "").strip().splitlines()[0] if obj.__doc__ else "")
    if match is None:
        return None
    params = []
    for part in [p.strip() for p in match["params"].split(",") if p.strip()]:
        name = re.match(r"[*\w]+", part).group(0)
        if name != "self":
            params.append(name + ("=" if "=" in part else ""))
    return params


def class_members(cls, stubbed) -> dict[str, object]:
    """Public members of a bound class, and the dunders the stub declares."""
    return {n: v for n, v in vars(cls).items() if (not n.startswith("_") or n in stubbed)}


def test_stub_names_are_the_module_names():
    stubbed = set()
    for node in stub_tree().body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            stubbed.add(node.target.id)
    assert stubbed == {n for n in dir(_C) if not n.startswith("__")}


def test_stub_signatures_match_the_bindings():
    checked = 0
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            assert stub_params(node) == native_params(getattr(_C, node.name)), node.name
            checked += 1
        elif isinstance(node, ast.ClassDef) and node.body and isinstance(
                node.body[-1], ast.FunctionDef):
            cls = getattr(_C, node.name)
            stubbed = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
            members = class_members(cls, stubbed)
            assert set(stubbed) == set(members), node.name
            for name, function in stubbed.items():
                native = native_params(members[name]) if callable(members[name]) else None
                if native is not None and not inspect.isdatadescriptor(members[name]):
                    assert stub_params(function) == native, f"{node.name}.{name}"
                    checked += 1
    assert checked >= 30
