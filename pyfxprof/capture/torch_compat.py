"""The differences between the supported torch releases (docs/versions.md), each found by probing
the installed torch for the feature itself, never by comparing version strings: the one place
where pyfxprof adapts to a torch release. Every stage that uses torch may import it."""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any, Callable

import torch


def undecorated(function: Callable) -> Callable:
    """`function` without the Dynamo guard newer torch wraps each dispatch mode's
    ``__torch_dispatch__`` in (``functools.wraps``, so ``__wrapped__``); older torch wraps
    nothing and the function is returned as it is.

    Example:
        >>> undecorated(functools.wraps(len)(lambda x: len(x))) is len
        True
        >>> undecorated(len) is len
        True
    """
    return getattr(function, "__wrapped__", function)


@functools.cache
def _takes_keyword(function: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):  # no signature to read: a builtin
        return False


def fn_def_keywords(expanded_def: bool) -> dict[str, Any]:
    """The keywords to pass on to FX's ``CodeGen.gen_fn_def``: ``expanded_def`` where this torch
    takes it (it writes each argument's annotation on a line of its own), none where not.

    Example:
        >>> fn_def_keywords(False) in ({}, {"expanded_def": False})
        True
    """
    from torch.fx.graph import CodeGen
    return {"expanded_def": expanded_def} if _takes_keyword(CodeGen.gen_fn_def, "expanded_def") \
        else {}


def isolates_recompiles() -> bool:
    """True where torch.compile takes ``isolate_recompiles`` (a compile's cache entries and
    recompiles kept in a region of their own); elsewhere Dynamo's recompile limit is shared
    with other compiles of the same code.

    Example:
        >>> isolates_recompiles() in (True, False)
        True
    """
    return _takes_keyword(torch.compile, "isolate_recompiles")


def isolated_compile_keywords(isolated: bool = True) -> dict[str, Any]:
    """torch.compile's keywords for ``isolate_recompiles=isolated``: none where this torch
    lacks it (isolates_recompiles).

    Example:
        >>> isolated_compile_keywords() in ({}, {"isolate_recompiles": True})
        True
    """
    return {"isolate_recompiles": isolated} if isolates_recompiles() else {}


def known_config(module: str, patches: dict[str, Any]) -> dict[str, Any]:
    """The `patches` of torch's config module `module` this torch has: older torch lacks e.g.
    Dynamo's ``ignore_logging_functions`` (logging calls break the graph there instead of being
    skipped) and Inductor's ``trace.provenance_tracking_level`` (kernels then have no source
    nodes).

    Example:
        >>> known_config("torch._dynamo.config", {"no_such_setting": 1, "verbose": False})
        {'verbose': False}
    """
    config = importlib.import_module(module)
    return {name: value for name, value in patches.items() if hasattr(config, name)}


#: Attributes by which Dynamo's wrappers of a compile's backend name the one they wrap: newer
#: torch sets the first on every wrapper, older torch the second on some.
_WRAPPED_BACKEND = ("_torchdynamo_orig_backend", "_torchdynamo_orig_callable")


def original_backend(callback: Any) -> Any:
    """The backend at the end of the chain of wrappers Dynamo puts around a compile's backend
    (an OptimizedModule's ``dynamo_ctx.callback``).

    Example:
        >>> compiled = torch.compile(torch.nn.ReLU())
        >>> type(original_backend(compiled.dynamo_ctx.callback)).__name__
        '_TorchCompileInductorWrapper'
    """
    while True:
        wrapped = next((getattr(callback, name) for name in _WRAPPED_BACKEND
                        if hasattr(callback, name)), None)
        if wrapped is None or wrapped is callback:
            return callback
        callback = wrapped


def exported_input_check() -> Callable[[torch.nn.Module, tuple, dict], None]:
    """torch's check of a module made by ``ExportedProgram.module()`` against its inputs
    (positional, keywords): raises when they do not fit the program's input spec and range
    constraints. Older torch has it only as the module's forward pre-hook.

    Example:
        >>> gm = torch.export.export(torch.nn.Linear(2, 2), (torch.zeros(1, 2),)).module()
        >>> exported_input_check()(gm, (torch.zeros(1, 2),), {})
    """
    from torch.export import _unlift
    check = getattr(_unlift, "_check_input_constraints_for_module", None)
    return check if check is not None else _unlift._check_input_constraints_pre_hook
