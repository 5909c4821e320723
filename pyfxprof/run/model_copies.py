"""The copies of each side that compare() times in turn, block by block: the model given and
deep copies of it. Two copies of one model differ row by row by themselves (where their
captures and tensors lie, docs/ab.md), so each side is timed as several copies and every row
is judged against the spread between the pairs of copies; by default as many as fit, up to
DEFAULT_COPIES.

Example:
    >>> sides = copies_of_sides([torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)], None)
    >>> [len(side) for side in sides]
    [4, 4]
"""

from __future__ import annotations

import copy
import itertools
import warnings

import torch

from ..errors import PyfxprofError, first_line

#: Copies of each side compare() times by default, when they fit in COPIES_MEMORY: A/A
#: comparisons of ResNet-18 flag fewer rows with four copies than with one (docs/ab.md,
#: "The paired analysis"; the counts measured: benchmarks/README.md, bench_ab.py).
DEFAULT_COPIES = 4
#: Bytes the extra copies' parameters and buffers (both sides) may take by default.
COPIES_MEMORY = 1 << 30


def default_copies(models: list[torch.nn.Module]) -> int:
    """Copies per side by default: DEFAULT_COPIES, or fewer (at least 1) when the extra
    copies of both models' parameters and buffers would take more than COPIES_MEMORY.

    >>> default_copies([torch.nn.Linear(4, 4)] * 2)
    4
    >>> big = torch.nn.Linear(8192, 8192, device="meta")    # 256 MiB
    >>> default_copies([big, big]), default_copies([big] * 6)
    (2, 1)
    """
    size = sum(t.numel() * t.element_size() for model in models
               for t in itertools.chain(model.parameters(), model.buffers()))
    return DEFAULT_COPIES if size == 0 else max(1, min(DEFAULT_COPIES, 1 + COPIES_MEMORY // size))


def copies_of_sides(models: list[torch.nn.Module], copies: int | None
                    ) -> list[list[torch.nn.Module]]:
    """Per side, the model and ``copies - 1`` deep copies of it; ``copies`` None: as many as
    default_copies, or one each (with a warning) when a model cannot be deep-copied. Asked
    for explicitly, a model that cannot be copied is one line."""
    wanted = default_copies(models) if copies is None else copies
    try:
        return [_copies(model, wanted, side) for model, side in zip(models, ("control", "test"))]
    except PyfxprofError as error:
        if copies is not None:
            raise
        warnings.warn(f"pyfxprof: {error}; timing one copy of each model", stacklevel=3)
        return [[model] for model in models]


def _copies(model: torch.nn.Module, copies: int, side: str) -> list[torch.nn.Module]:
    """The model and ``copies - 1`` deep copies of it (one line when it cannot be copied)."""
    try:
        return [model] + [copy.deepcopy(model) for _ in range(copies - 1)]
    except Exception as error:  # noqa: BLE001 - the user's model
        raise PyfxprofError(f"cannot copy the {side} model ({type(error).__name__}: "
                            f"{first_line(error)}); pass copies=1 (CLI: --copies 1)") from None
