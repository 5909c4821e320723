"""MODEL, --input and --threads: the arguments of every sub-command that runs a model."""

from __future__ import annotations

import argparse

import torch

from ..model_spec import DEFAULT_INPUT, DEFAULT_MODEL, load_model, parse_input
from .arg_types import integer_at_least


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
    parser.add_argument("--input", action="append", metavar="SHAPE[:DTYPE]",
                        help=f"a random input of this shape, e.g. {DEFAULT_INPUT} or 8x128:int64; "
                             f"repeat for several positional inputs (default {DEFAULT_INPUT})")
    parser.add_argument("--threads", type=integer_at_least(1), metavar="N",
                        help="torch.set_num_threads(N) before running (default: torch's choice)")


def model_and_inputs(args: argparse.Namespace) -> tuple[torch.nn.Module, tuple, str]:
    """The model, its inputs and a display name from parsed arguments (applies --threads).

    Example:
        >>> args = argparse.Namespace(model="torch.nn:ReLU", input=["2x3"], threads=None)
        >>> model, inputs, name = model_and_inputs(args)
        >>> name, inputs[0].shape
        ('ReLU', torch.Size([2, 3]))
    """
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    model = load_model(args.model)
    inputs = tuple(parse_input(text, seed=i) for i, text in enumerate(args.input or [DEFAULT_INPUT]))
    return model, inputs, args.model.rpartition(":")[2]
