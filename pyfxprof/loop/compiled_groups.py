"""The Profiler loop on a torch.compile'd model: each input signature's calls as a call group
whose capture is the model compiled again by Inductor (the user's settings, provenance on),
every kernel call timed; calls run the timed compiled wrapper and get its outputs."""

from __future__ import annotations

import time
from typing import Any

import torch

from ..capture.inductor import InductorCapture, compile_settings
from ..capture.inputs import BoundInputs, input_tensors
from ..capture.placement import device_of
from ..capture.tracing import Capture
from ..errors import PyfxprofError
from ..timing.compiled_executor import CompiledExecutor, plan_graph
from .call_groups import _VARIANT, MAX_GUARD_VARIANTS, CallGroup, analysis_copy, call_label
from ..run.compiled_profile import compiled_frame, notes


def forward_graphs(capture: InductorCapture) -> int:
    """How many forward graphs the capture holds (a backward graph, compiled at the first
    backward of a training call, does not count)."""
    return sum(not getattr(graph.output, "fx_kwargs", {}).get("is_backward", False)
               for graph in capture.graphs)


class CompiledCalls:
    """The `frame` of a compiled call group's Capture (the loop's CallGroup calls it): makes
    each call through the timed compiled wrapper. It accepts calls in the autograd mode it
    was compiled in while Dynamo has compiled no further forward graph for it (a call that
    recompiled is counted incomplete; later calls go to a new capture, a guard variant)."""

    def __init__(self, capture: InductorCapture, executor: CompiledExecutor) -> None:
        self.capture, self.executor = capture, executor
        self.modes = (torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        self.graphs = forward_graphs(capture)
        self.recompiled = False

    def accepts(self, bound: BoundInputs) -> bool:
        """Whether this capture serves the call (autograd mode unchanged, no recompile)."""
        return not self.recompiled and self.modes == (torch.is_grad_enabled(),
                                                      torch.is_inference_mode_enabled())

    def refusal(self, bound: BoundInputs) -> str:
        """Why accepts() refused, for the loop's warning."""
        if self.recompiled:
            return "Dynamo recompiled the model for a call (its guards changed)"
        return f"the autograd mode (grad, inference) {self.modes} changed"

    def positional(self) -> None:
        """None: no call of a compiled group takes the loop's hot path (each goes through
        the compiled wrapper, whose recompiles `call` watches; DynamoFrame.positional)."""
        return None

    def call(self, bound: BoundInputs) -> Any:
        """One timed call of the compiled model (the model's output)."""
        output = self.executor.run(bound.args, bound.kwargs)
        if forward_graphs(self.capture) != self.graphs:
            self.recompiled = True
        return output


def compiled_group(model: torch.nn.Module, args: tuple, kwargs: dict, key: tuple, index: int,
                   refusal: str | None = None) -> CallGroup:
    """capture_group (loop/call_groups.py) for a torch.compile'd `model`: its `_orig_mod`
    compiled with its settings on copies of the call, in the current autograd mode, the
    timed wrappers swapped in for good (the capture is pyfxprof's own, never the user's).

    Example:
        >>> compiled = torch.compile(torch.nn.Linear(2, 2))
        >>> group = compiled_group(compiled, (torch.ones(1, 2),), {}, (), 0)  # doctest: +SKIP
        >>> group.capture.mode, group.hooks                                   # doctest: +SKIP
        ('inductor', False)
    """
    variant = key[-1][1] if key and key[-1][0] == _VARIANT else None
    if variant is not None and variant > MAX_GUARD_VARIANTS:
        raise PyfxprofError(f"the compiled model was captured {MAX_GUARD_VARIANTS} times for "
                            f"this signature ({refusal})")
    started = time.perf_counter_ns()
    module, settings = compile_settings(model, None)
    assert settings is not None, "a torch.compile'd model has its settings"
    capture = InductorCapture(module, settings)
    capture.first_call(_copies(args, kwargs))
    plans = [plan_graph(graph) for graph in capture.graphs]
    frame = compiled_frame(plans, type(module).__name__)
    executor = CompiledExecutor(capture.compiled, {}, plans)
    executor.instrumented(True)
    calls = CompiledCalls(capture, executor)
    label = call_label(args, kwargs)
    label += "" if variant is None else f" ({_VARIANT} {variant})"
    return CallGroup(index, key, label, Capture(None, "inductor", notes(settings, plans),
                                                frame=calls),
                     frame, 0, executor, model.training, device_of(module, args),
                     time.perf_counter_ns() - started)


def _copies(args: tuple, kwargs: dict) -> BoundInputs:
    """Copies of the call's arguments (call_groups.analysis_copy) that are inference tensors
    when the call's are: Dynamo guards on it, and the capture must serve the calls."""
    tensors = input_tensors(BoundInputs(args, kwargs))
    with torch.inference_mode(bool(tensors) and tensors[0].is_inference()):
        return BoundInputs(*analysis_copy((args, kwargs)))
