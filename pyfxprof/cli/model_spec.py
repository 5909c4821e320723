"""Turning CLI text into a model and inputs: `package.module:callable` specs, `5x3x224x224` shapes
and keyword inputs such as `input_ids=1x16:int64`."""

from __future__ import annotations

import importlib
import inspect
import math
import os
import re
import sys
import warnings

import torch

from ..errors import PyfxprofError, first_line

#: The model `pyfxprof profile` uses when none is given.
DEFAULT_MODEL = "pyfxprof.cli.default_model:resnet18"
#: Its input shape.
DEFAULT_INPUT = "5x3x224x224"
#: Most elements of one --input tensor (2**40: 4 TiB of float32, past any machine's memory).
MAX_INPUT_ELEMENTS = 2**40

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "float64": torch.float64, "int64": torch.int64, "int32": torch.int32}
_SHAPE = re.compile(r"^\d+(x\d+)*$")
_KEYWORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


_MISSING = object()
#: What a MODEL spec may give: a module, or a program from torch.export.
_MODELS = (torch.nn.Module, torch.export.ExportedProgram)


def _user_code(call, failed: str):
    """``call()``, the user's code: any exception, a syntax error or SystemExit becomes one
    PyfxprofError line starting with ``failed`` (KeyboardInterrupt passes through)."""
    try:
        return call()
    except SystemExit as error:
        raise PyfxprofError(f"{failed}: it called SystemExit({error.code!r})") from None
    except SyntaxError as error:
        raise PyfxprofError(f"{failed}: SyntaxError in {error.filename}, line {error.lineno}: "
                            f"{error.msg}") from None
    except ImportError as error:
        raise PyfxprofError(f"{failed}: {error}") from None
    except Exception as error:  # noqa: BLE001 - the user's module or factory
        raise PyfxprofError(f"{failed}: {type(error).__name__}: {first_line(error)}") from None


def load_model(spec: str) -> torch.nn.Module | torch.export.ExportedProgram:
    """Import `package.module:callable` and call it (a Module class or a factory) with no arguments.
    A torch.export program (an ExportedProgram, or a module or factory returning one) is
    returned as it is: profile() takes it (docs/capture.md).

    Modules are found on sys.path and in the current directory, as `python -m` would.

    Example:
        >>> load_model("torch.nn:Identity")
        Identity()
    """
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise PyfxprofError(f"model spec {spec!r} must look like 'package.module:callable', "
                            f"e.g. {DEFAULT_MODEL!r}")
    if module_name.startswith("."):
        raise PyfxprofError(f"model spec {spec!r} is relative; name the module from the top, "
                            "e.g. 'mypackage.mod:Net' (run from the directory holding it)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    obj = _user_code(lambda: importlib.import_module(module_name),
                     f"cannot import {module_name!r} for model {spec!r}")
    for part in attr_path.split("."):
        obj = _user_code(lambda: getattr(obj, part, _MISSING),
                         f"reading {part!r} of model {spec!r} failed")
        if obj is _MISSING:
            raise PyfxprofError(f"{module_name!r} has no attribute {attr_path!r} (model {spec!r})")
    if isinstance(obj, _MODELS):
        return obj
    if not callable(obj):
        raise PyfxprofError(f"{spec!r} is a {type(obj).__name__}, not a Module class or factory")
    kind = "class" if inspect.isclass(obj) else "factory"
    model = _user_code(obj, f"calling {kind} {spec!r}() failed")
    if not isinstance(model, _MODELS):
        raise PyfxprofError(f"{spec!r}() returned a {type(model).__name__}, not a torch.nn.Module "
                            "or torch.export.ExportedProgram")
    return model


def parse_input(text: str, device: str = "cpu", seed: int = 0) -> torch.Tensor:
    """A random tensor for `SHAPE[:DTYPE]`, e.g. `5x3x224x224` or `8x128:int64`.

    Float inputs are standard normal; integer inputs are in [0, 100). Seeded, so runs match.

    Example:
        >>> parse_input("2x3").shape
        torch.Size([2, 3])
    """
    shape_text, _, dtype_name = text.partition(":")
    if not _SHAPE.match(shape_text):
        raise PyfxprofError(f"input {text!r} is not a shape like 5x3x224x224 (optionally :dtype)")
    dtype_name = dtype_name or "float32"
    if dtype_name not in _DTYPES:
        raise PyfxprofError(f"input dtype {dtype_name!r} is not one of {', '.join(_DTYPES)}")
    shape = tuple(int(d) for d in shape_text.split("x"))
    if math.prod(shape) > MAX_INPUT_ELEMENTS:
        raise PyfxprofError(f"input {text[:60]!r} has {math.prod(shape):.3g} elements, more than "
                            f"{MAX_INPUT_ELEMENTS:.0e}; use a smaller shape")
    if 0 in shape:
        warnings.warn(f"pyfxprof: input {text!r} is empty (a dimension is 0): the model runs "
                      "on no data, so the profile shows per-op overhead only", stacklevel=2)
    dtype = _DTYPES[dtype_name]
    generator = torch.Generator().manual_seed(seed)
    try:
        if dtype.is_floating_point:
            tensor = torch.randn(shape, generator=generator).to(dtype)
        else:
            tensor = torch.randint(0, 100, shape, generator=generator, dtype=dtype)
    except (RuntimeError, MemoryError) as error:
        raise PyfxprofError(f"input {text!r} cannot be allocated ({first_line(error)[:120]}); "
                            "use a smaller shape") from None
    return tensor.to(device)


def parse_input_argument(text: str, device: str = "cpu", seed: int = 0) -> tuple[str | None, torch.Tensor]:
    """(keyword or None, random tensor) for `[NAME=]SHAPE[:DTYPE]`, e.g. `input_ids=1x16:int64`
    (a keyword input) or `1x3x224x224` (a positional one).

    Example:
        >>> name, ids = parse_input_argument("input_ids=1x16:int64")
        >>> name, ids.shape, ids.dtype
        ('input_ids', torch.Size([1, 16]), torch.int64)
    """
    name, sep, shape = text.partition("=")
    if not sep:
        return None, parse_input(text, device, seed)
    if not _KEYWORD.match(name):
        raise PyfxprofError(f"input {text!r}: {name!r} is not a keyword argument name; write "
                            "NAME=SHAPE[:DTYPE], e.g. input_ids=1x16:int64")
    return name, parse_input(shape, device, seed)
