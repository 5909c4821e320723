"""How Profile.replay_script's script builds a node's module: a torch.nn module, or a
user-defined one imported from its module path, rebuilt from the constructor arguments read
off the live module (its __init__ parameters kept as attributes) and checked against its
state_dict's names and shapes; a module it cannot rebuild is refused in one line."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

import torch

from ..errors import PyfxprofError

#: __init__ parameters a script leaves to .to() (the weights' device and dtype).
PLACEMENT = ("self", "device", "dtype")


def _literal(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_literal(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def constructor_arguments(module: torch.nn.Module) -> dict[str, Any]:
    """The __init__ arguments of `module` read off its attributes of the same names (plain
    values only: numbers, strings, None, tuples of them; a ``bias`` tensor as True), or a
    one-line error naming a required one it does not keep.

    Example:
        >>> constructor_arguments(torch.nn.Linear(4, 2, bias=False))
        {'in_features': 4, 'out_features': 2, 'bias': False}
    """
    kind, found = type(module), {}
    for name, parameter in inspect.signature(kind.__init__).parameters.items():
        if name in PLACEMENT or parameter.kind in (parameter.VAR_POSITIONAL,
                                                   parameter.VAR_KEYWORD):
            continue
        value = getattr(module, name, inspect.Parameter.empty)
        if name == "bias" and (value is None or isinstance(value, torch.Tensor)):
            value = value is not None
        if value is not inspect.Parameter.empty and _literal(value):
            found[name] = value
        elif parameter.default is inspect.Parameter.empty:
            raise PyfxprofError(
                f"cannot write a script for a {kind.__qualname__} module: its __init__ takes "
                f"{name!r}, which the module does not keep as a plain attribute "
                f"(self.{name} = {name}); keep it so, or report the node by its shapes")
    return found


def import_lines(kind: type) -> tuple[str, str]:
    """How a fresh interpreter imports a user-defined module class: (the lines that import
    it, the name it is bound to), or a one-line error when it cannot be imported.

    Example:
        >>> import_lines(torch.nn.Linear)
        ('', 'torch.nn.Linear')
    """
    if kind.__module__.startswith("torch.nn.") and getattr(torch.nn, kind.__name__, None) is kind:
        return "", f"torch.nn.{kind.__name__}"
    where = f"{kind.__module__}.{kind.__qualname__}"
    if kind.__module__ == "__main__" or "<locals>" in kind.__qualname__:
        raise PyfxprofError(
            f"cannot write a script for a {where} module: it is defined "
            f"{'in the main script' if kind.__module__ == '__main__' else 'inside a function'}"
            f", which a fresh interpreter cannot import; move it into a module file")
    found: Any = importlib.import_module(kind.__module__)
    for part in kind.__qualname__.split("."):
        found = getattr(found, part, None)
    if found is not kind:
        raise PyfxprofError(f"cannot write a script for a {where} module: importing "
                            f"{kind.__module__} does not give this class")
    lines = f"from {kind.__module__} import {kind.__qualname__.split('.')[0]}"
    root = _import_root(kind.__module__)
    if root:
        lines = f"import sys\nsys.path.insert(0, {root!r})  # where {kind.__module__} is\n{lines}"
    return lines, kind.__qualname__


def _import_root(name: str) -> str:
    """The folder a module is imported from (its top package's parent), "" when unknown."""
    file = getattr(sys.modules.get(name), "__file__", None)
    if not file:
        return ""
    path = Path(file).resolve().parent
    for _ in range(name.count(".") + (Path(file).name == "__init__.py")):
        path = path.parent
    return str(path)


def constructor_source(module: torch.nn.Module) -> str:
    """`X(...)` rebuilding a module from its constructor arguments (X as import_lines binds
    it), checked in this process: the rebuilt module's state_dict has the live one's names
    and shapes.

    Example:
        >>> constructor_source(torch.nn.Conv2d(3, 8, 3, stride=2, bias=False))
        "torch.nn.Conv2d(in_channels=3, out_channels=8, kernel_size=(3, 3), stride=(2, 2), padding=(0, 0), dilation=(1, 1), groups=1, bias=False, padding_mode='zeros')"
    """
    kind = type(module)
    _, name = import_lines(kind)
    arguments = constructor_arguments(module)
    rebuilt = kind(**arguments)
    shapes = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    again = {k: tuple(v.shape) for k, v in rebuilt.state_dict().items()}
    if shapes != again:
        differ = sorted(set(shapes.items()) ^ set(again.items()))[:2]
        raise PyfxprofError(f"cannot write a script for a {kind.__qualname__} module: rebuilt "
                            f"from its attributes it differs in its weights {differ}")
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
