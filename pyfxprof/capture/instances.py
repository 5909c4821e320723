"""Which module instance ran a Dynamo graph: Dynamo writes a graph's module paths relative to
the frame it compiled (``L['self'].a`` in a block's ``forward``) and runs one graph for every
instance whose guards it passes (each block of a ModuleList), so the instance is found where
the graph runs: the modules whose calls are on the Python stack, and what the frame's locals
hold."""

from __future__ import annotations

import os
import re
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

import torch

#: Dynamo's source text of a frame local (``L['self']``, ``L['target'].__self__``): its name,
#: and ``.__self__`` when the local is a bound method of the module.
_LOCAL = re.compile(r"^L\[['\"]([^'\"]*)['\"]\](\.__self__)?")
_MODULE_FILE = torch.nn.modules.module.__file__
_DYNAMO_DIR = os.path.join(os.path.dirname(torch.__file__), "_dynamo")


@dataclass(frozen=True)
class Instance:
    """Where a graph ran: `ancestors`, the (path, type) of each module whose call is on the
    stack, outermost first (the root left out); `roots`, (local name, module path) of each
    local of the graph's frame that is a module of the model (``name.__self__`` for a bound
    method of one).

    Example:
        >>> block = Instance((("blocks.2", torch.nn.Module),), (("self", "blocks.2"),))
        >>> block.path_of("L['self']._modules['a']", "a"), block.path_of("G['m'].a", "a")
        ('blocks.2.a', 'a')
    """

    ancestors: tuple[tuple[str, type], ...]
    roots: tuple[tuple[str, str], ...]

    def path_of(self, source: str, relative: str) -> str:
        """The model's path of the module Dynamo names `source` (`relative`: its path from
        the frame's local); `relative` itself where the local is not one of `roots`."""
        found = _LOCAL.match(source)
        prefix = dict(self.roots).get(found.group(1) + (found.group(2) or "")) if found else None
        if prefix is None:
            return relative
        return ".".join(part for part in (prefix, relative) if part)


def locate(modules: dict[int, str], stop: types.CodeType | None,
           skipped: frozenset[str]) -> Instance:
    """The Instance of the graph being run by the caller's caller: the first frame up the
    stack outside Dynamo and the files in `skipped` runs it; module calls are read up to the
    frame running `stop` (DynamoFrame.call). `modules`: id of each module of the model to
    its path."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename in skipped
                                 or frame.f_code.co_filename.startswith(_DYNAMO_DIR)):
        frame = frame.f_back
    if frame is None:
        return Instance((), ())
    roots = _roots(frame.f_locals, modules)
    ancestors: list[tuple[str, type]] = []
    while frame is not None and frame.f_code is not stop:
        if frame.f_code.co_filename == _MODULE_FILE:
            owner = frame.f_locals.get("self")
            path = modules.get(id(owner))
            if path and path not in (entry[0] for entry in ancestors):
                ancestors.append((path, type(owner)))
        frame = frame.f_back
    return Instance(tuple(reversed(ancestors)), roots)


def _roots(local_values: Any, modules: dict[int, str]) -> tuple[tuple[str, str], ...]:
    """(name, path) of each local that is a module of the model, or a bound method of one."""
    roots = []
    for name, value in local_values.items():
        if id(value) in modules:
            roots.append((name, modules[id(value)]))
        elif isinstance(value, types.MethodType) and id(value.__self__) in modules:
            roots.append((name + ".__self__", modules[id(value.__self__)]))
    return tuple(roots)


def instance_stack(raw: dict, instance: Instance, relative: Callable[[str], str]) -> dict:
    """A node's module stack ({path: (path, type)}, outermost first, the root left out) at
    `instance`, from Dynamo's stack `raw` ({key: (source, type)}); `relative` turns a source
    into its path from the frame's local (capture.dynamo.module_path).

    Example:
        >>> block = Instance((("blocks.2", torch.nn.Module),), (("self", "blocks.2"),))
        >>> raw = {"1": ("L['self'].a", torch.nn.Linear)}
        >>> list(instance_stack(raw, block, lambda s: s.split(".", 1)[1]))
        ['blocks.2', 'blocks.2.a']
    """
    stack = {path: (path, kind) for path, kind in instance.ancestors}
    for value in raw.values():
        if isinstance(value, tuple):
            path = instance.path_of(value[0], relative(value[0]))
            if path and path not in stack:
                stack[path] = (path, value[1])
    return stack


def modules_of(target: Any) -> dict[int, str] | None:
    """Id of each module of the model `target` is (or whose bound method it is) to its path;
    None when `target` belongs to no module.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.ReLU())
        >>> sorted(modules_of(model.forward).values())
        ['', '0']
    """
    root = target if isinstance(target, torch.nn.Module) else getattr(target, "__self__", None)
    if not isinstance(root, torch.nn.Module):
        return None
    return {id(module): path for path, module in root.named_modules()}
