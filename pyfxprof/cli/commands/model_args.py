"""MODEL, --input and --threads: the arguments of every sub-command that runs a model."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any, Literal, overload

import torch

import pyfxprof
from ...errors import PyfxprofError
from ...run.runner import is_exported  # capture's, read through run (docs/architecture.md)
from ..model_spec import DEFAULT_INPUT, DEFAULT_MODEL, load_model, parse_input_argument
from .arg_types import integer_at_least

if TYPE_CHECKING:
    from torch.export import ExportedProgram

#: Most --threads accepted (more makes OpenMP abort the process when it cannot start them).
MAX_THREADS = 1024


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """Register MODEL (positional, optional), --input (repeatable) and --threads.

    Example:
        >>> parser = argparse.ArgumentParser()
        >>> add_model_arguments(parser)
        >>> parser.parse_args(["--input", "2x3"]).input
        ['2x3']
    """
    parser.add_argument("model", nargs="?", default=DEFAULT_MODEL, metavar="MODEL",
                        help=f"package.module:callable returning an nn.Module "
                             f"(default {DEFAULT_MODEL})")
    parser.add_argument("--input", action="append", metavar="[NAME=]SHAPE[:DTYPE]",
                        help=f"a random input of this shape, e.g. {DEFAULT_INPUT}, 8x128:int64 "
                             "(integers in [0, 100)) or input_ids=1x16:int64 (a keyword input); "
                             f"repeat for several inputs (default {DEFAULT_INPUT})")
    add_threads_argument(parser)


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """Register --threads, which apply_threads applies."""
    parser.add_argument("--threads", type=integer_at_least(1), metavar="N",
                        help="torch.set_num_threads(N) before running (default: torch's choice)")


def apply_threads(threads: int | None) -> None:
    """torch.set_num_threads(threads) unless None; more than MAX_THREADS refused in one line."""
    if threads is None:
        return
    if threads > MAX_THREADS:
        raise PyfxprofError(f"--threads {threads} is more than {MAX_THREADS}; give at most the "
                            f"cores to use (this machine has {os.cpu_count()})")
    torch.set_num_threads(threads)


@overload
def model_and_inputs(args: argparse.Namespace,
                     programs: Literal[False] = False) -> tuple[torch.nn.Module, Any, str]: ...


@overload
def model_and_inputs(args: argparse.Namespace,
                     programs: bool) -> tuple[torch.nn.Module | ExportedProgram, Any, str]: ...


def model_and_inputs(args: argparse.Namespace, programs: bool = False
                     ) -> tuple[torch.nn.Module | ExportedProgram, Any, str]:
    """The model, its inputs and a display name from parsed arguments (applies --threads).
    The inputs are a tuple (positional only), a dict (keywords only) or a BoundInputs. A
    torch.export program is refused in one line unless the command takes `programs`.

    Example:
        >>> args = argparse.Namespace(model="torch.nn:ReLU", input=["2x3"], threads=None)
        >>> model, inputs, name = model_and_inputs(args)
        >>> name, inputs[0].shape
        ('ReLU', torch.Size([2, 3]))
    """
    apply_threads(args.threads)
    model = load_model(args.model)
    if not programs and is_exported(model):
        raise PyfxprofError(f"{args.model!r} gives a torch.export program, which this command "
                            "does not take: give the nn.Module it was exported from "
                            "(pyfxprof profile takes programs)")
    return model, parse_inputs(args.input or [DEFAULT_INPUT]), args.model.rpartition(":")[2]


def parse_inputs(texts: list[str]) -> Any:
    """Inputs from --input texts: a tuple of the positional ones, a dict of the keyword ones,
    or a BoundInputs when both are given (positional ones first, as in Python calls).

    Example:
        >>> type(parse_inputs(["2x3"])).__name__, list(parse_inputs(["ids=1x4:int64"]))
        ('tuple', ['ids'])
    """
    args: list[torch.Tensor] = []
    kwargs: dict[str, torch.Tensor] = {}
    for seed, text in enumerate(texts):
        name, tensor = parse_input_argument(text, seed=seed)
        if name is None and kwargs:
            raise PyfxprofError(f"positional input {text!r} after a keyword input: give "
                                "positional inputs first")
        if name in kwargs:
            raise PyfxprofError(f"keyword input {name!r} given twice")
        if name is None:
            args.append(tensor)
        else:
            kwargs[name] = tensor
    if not kwargs:
        return tuple(args)
    return pyfxprof.BoundInputs(tuple(args), kwargs) if args else kwargs
