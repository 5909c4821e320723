"""Programs made by torch.export: an ExportedProgram, or the module ``ep.module()`` gives back,
captured as their graph is (aten nodes; module paths and source lines from the
``nn_module_stack`` and ``stack_trace`` torch.export keeps), with the inputs checked against the
program's range constraints. An exported program has no eval/train modes: it is never switched."""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch.utils._pytree import TreeSpec

from ..errors import PyfxprofError, first_line
from .inputs import BoundInputs
from .torch_compat import exported_input_check


def _stateful_module_type() -> type | None:
    """torch's class of the modules ``ExportedProgram.module()`` returns, once torch has loaded
    it (before that no such module exists; importing it would load TorchDynamo)."""
    return getattr(sys.modules.get("torch.export._unlift"), "_StatefulGraphModule", None)


def _is_program(model: Any) -> bool:
    """True for an ExportedProgram (its module is loaded once a program exists)."""
    programs = sys.modules.get("torch.export.exported_program")
    return programs is not None and isinstance(model, programs.ExportedProgram)


def is_exported(model: Any) -> bool:
    """True for an ExportedProgram or a module made by its ``module()``.

    Example:
        >>> is_exported(torch.nn.ReLU())
        False
        >>> is_exported(torch.export.export(torch.nn.ReLU(), (torch.zeros(2),)).module())
        True
    """
    stateful = _stateful_module_type()
    return _is_program(model) or (stateful is not None and isinstance(model, stateful))


def exported_module(model: Any) -> Any:
    """The module to run for `model`: ``ep.module()`` of an ExportedProgram (its parameters and
    buffers, lifted as inputs in the program, become the module's attributes: the same
    tensors), anything else as it is.

    Example:
        >>> ep = torch.export.export(torch.nn.Linear(2, 2), (torch.zeros(1, 2),))
        >>> is_exported(exported_module(ep)), isinstance(exported_module(ep), torch.nn.Module)
        (True, True)
    """
    return model.module() if _is_program(model) else model


def exported_name(module: torch.nn.Module) -> str:
    """The name of the model an exported module was exported from, from the root entry of its
    nodes' module stacks (``Sequential``), else ``ExportedProgram``.

    Example:
        >>> exported_name(torch.export.export(torch.nn.Linear(2, 2), (torch.zeros(1, 2),)).module())
        'Linear'
    """
    graph = module.graph
    if not isinstance(graph, torch.fx.Graph):  # (Module.__getattr__ is typed Tensor | Module)
        return "ExportedProgram"
    for node in graph.nodes:
        for value in (node.meta.get("nn_module_stack") or {}).values():
            if isinstance(value, tuple) and value[0] == "":
                kind = value[1]
                return getattr(kind, "__name__", None) or str(kind).rsplit(".", 1)[-1]
    return "ExportedProgram"


def check_exported_inputs(module: torch.nn.Module, bound: BoundInputs) -> None:
    """A one-line PyfxprofError when `bound` does not fit the exported program: another
    structure of arguments, or a shape outside its range constraints (a dimension exported
    static that differs, or a dynamic one beyond its min/max).

    Example:
        >>> gm = torch.export.export(torch.nn.Linear(2, 2), (torch.zeros(1, 2),)).module()
        >>> check_exported_inputs(gm, BoundInputs((torch.zeros(1, 3),)))
        Traceback (most recent call last):
        ...
        pyfxprof.errors.PyfxprofError: the inputs do not fit the exported program: Expected input at *args[0].shape[1] to be equal to 2, but got 3 (profile it with inputs it accepts, or export it again with dynamic_shapes= covering them)
    """
    try:
        exported_input_check()(module, *_as_exported(module, bound))
    except Exception as error:  # torch's checks: a RuntimeError, ValueError or AssertionError
        why = first_line(error).split(". ")[0]  # torch's advice after it is about export
        if isinstance(error, ValueError) and "tree spec" in why:
            why = "its arguments are not those the program was exported with"
        raise PyfxprofError(f"the inputs do not fit the exported program: {why.rstrip('. :')} "
                            "(profile it with inputs it accepts, or export it again with "
                            "dynamic_shapes= covering them)") from None


def _as_exported(module: torch.nn.Module, bound: BoundInputs) -> tuple[tuple, dict]:
    """(positional, keywords) as the program was exported with them: the module's forward
    takes its keywords positionally after the positional arguments (bound so), the program's
    input spec names them."""
    spec = getattr(module, "_in_spec", None)  # set by torch's unlift, not in its stubs
    if not isinstance(spec, TreeSpec):  # another spec: check as bound
        return bound.args, bound.kwargs
    try:
        positional, keywords = spec.children()
        count, names = positional.num_children, list(keywords.context)
    except (AttributeError, ValueError, TypeError):  # another spec: check as bound
        return bound.args, bound.kwargs
    if bound.kwargs or not names or len(bound.args) != count + len(names):
        return bound.args, bound.kwargs
    return bound.args[:count], dict(zip(names, bound.args[count:]))

