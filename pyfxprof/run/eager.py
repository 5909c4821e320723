"""The eager forward's time beside a graph's: on the dynamo rung a Profile times Dynamo's
graph, which leaves out the Python around it, so profile() also times the model's own
uninstrumented forward, in a short block right after the timed runs (docs/profile.md)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from ..capture.ladder import copied_inputs
from ..errors import first_line

#: Most eager forwards timed (after EAGER_WARMUP untimed ones); fewer when profile() ran fewer.
EAGER_RUNS = 20
EAGER_WARMUP = 2


def eager_forward_meta(model: torch.nn.Module, example_inputs: Any, runs: int,
                       device: str) -> dict:
    """``{"eager_forward_median_ns": ns, "eager_forward_runs": n}``: the median wall time of
    ``model(*inputs)`` called plainly (on a copy of the inputs, in the caller's modes), or
    ``{"eager_forward_error": why}`` when the eager call fails.

    Example:
        >>> meta = eager_forward_meta(torch.nn.ReLU(), (torch.zeros(4),), 5, "cpu")
        >>> meta["eager_forward_runs"], meta["eager_forward_median_ns"] > 0
        (5, True)
    """
    bound = copied_inputs(model, example_inputs)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    runs = max(1, min(runs, EAGER_RUNS))
    walls = []
    try:
        for _ in range(EAGER_WARMUP):
            bound.call(model)
        for _ in range(runs):
            sync()
            start = time.perf_counter_ns()
            bound.call(model)
            sync()
            walls.append(time.perf_counter_ns() - start)
    except Exception as error:  # the user's model: say why, keep the graph's Profile
        return {"eager_forward_error": f"{type(error).__name__}: {first_line(error)}"}
    return {"eager_forward_median_ns": float(np.median(walls)), "eager_forward_runs": runs}
