"""Dynamo capture for callers that need the model's real outputs (the Profiler's loop, under
Hugging Face ``generate``): a ModelOutput holding the caller's own KV cache, updated in place.

Dynamo turns a call into a graph of tensor operations plus generated Python code around it:
the code reads the graph's inputs from the call's arguments (the parameters, the cache's
tensors, sizes of dynamic dimensions), calls the graph, then rebuilds the model's output
from the graph's flat tensors and replays the call's side effects (the cache's new key and
value tensors stored in the caller's cache object). `frame_capture` keeps that code
(a `DynamoFrame`) and runs the graph inside it through a relay, so the instrumented graph
runs where Dynamo's compiled graph would, and every call gets exactly the output, the
object identities and the side effects the eager call gives. Dynamo's guards say which
calls the code is valid for (`DynamoFrame.accepts`); they are checked for every call.

Dimensions the Profiler's call groups do not pin (every tensor but the first one, so a
cache growing by one position per decode step) are marked dynamic, so one capture serves
every decode step.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx as fx

from ..errors import PyfxprofError, first_line
from .dynamo import run_dynamo, with_module_stacks
from .inputs import BoundInputs, input_tensors


@dataclass(frozen=True)
class LiveCall:
    """How the caller's real calls run: what they call (the model's own ``forward``), in
    which autograd mode, and whether a module of the model is in training mode. The
    capture runs in that autograd mode (Dynamo's guards check it).

    Example:
        >>> relu = torch.nn.ReLU().eval()
        >>> with torch.no_grad():
        ...     live = LiveCall.of(relu.forward, relu)
        >>> live.grad, live.training
        (False, False)
    """

    target: Callable
    grad: bool
    inference: bool
    training: bool
    refused: str | None = None  # why the dynamo rung may not serve these calls (None: it may)
    family: str | None = None  # captures of one signature share Dynamo's automatic dynamic

    @classmethod
    def of(cls, target: Callable, model: torch.nn.Module) -> "LiveCall":
        """`target` called in the current autograd mode, `model` in its current mode."""
        return cls(target, torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
                   any(module.training for module in model.modules()))

    def mode(self) -> Any:
        """A context manager entering the calls' autograd mode."""
        if self.inference:
            return torch.inference_mode()
        return _Modes(torch.inference_mode(False), torch.set_grad_enabled(self.grad))


class _Modes:
    """Two context managers entered in order, left in reverse."""

    def __init__(self, outer: Any, inner: Any) -> None:
        self.outer, self.inner = outer, inner

    def __enter__(self) -> None:
        self.outer.__enter__()
        self.inner.__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self.inner.__exit__(*exc_info)
        self.outer.__exit__(*exc_info)


class _Relay:
    """Dynamo's compiled graph as its generated code calls it: hands the graph's flat inputs
    to `runner` (the graph itself until an instrumented executor takes over)."""

    def __init__(self) -> None:
        self.runner: Callable[[tuple], Any] | None = None

    def __call__(self, *flat: Any) -> Any:
        return self.runner(flat)


@dataclass
class DynamoFrame:
    """Dynamo's generated code for one call signature, with its graph behind a relay.

    `call(bound)` makes the call as the model would (outputs, identities, side effects);
    `accepts(bound)` checks Dynamo's guards for the call; `run_graph_with(runner)` routes
    the graph's flat inputs to `runner(flat) -> flat outputs` (an executor's ``run``).
    """

    target: Callable
    function: types.FunctionType
    guards: Any
    relay: _Relay

    def accepts(self, bound: BoundInputs) -> bool:
        """Whether Dynamo's guards hold for this call (shapes, dtypes, flags, the cache's
        layout, the autograd mode...): only then is the captured code valid for it."""
        return bool(self.guards.check({"target": self.target, "args": bound.args,
                                       "kwargs": bound.kwargs}))

    def refusal(self, bound: BoundInputs) -> str:
        """The first of Dynamo's guards that refuses this call, as Dynamo prints it
        (e.g. ``L['args'][3].layers[0].cumulative_length == 8``)."""
        failure = self.guards.check_verbose({"target": self.target, "args": bound.args,
                                             "kwargs": bound.kwargs})
        parts = getattr(failure, "verbose_code_parts", None) or ["an unnamed guard"]
        return parts[0].split("  #")[0].strip()

    def call(self, bound: BoundInputs) -> Any:
        """The call ``target(*bound.args, **bound.kwargs)`` made by the captured code."""
        return self.function(self.target, bound.args, bound.kwargs)

    def run_graph_with(self, runner: Callable[[tuple], Any]) -> None:
        """Run the graph with `runner` from now on."""
        self.relay.runner = runner


def frame_capture(live: LiveCall, bound: BoundInputs,
                  name: str) -> tuple[fx.GraphModule, DynamoFrame]:
    """(the graph, with module stacks, and the DynamoFrame running it) of ``live.target``
    called on `bound` (run on a copy, in ``live``'s autograd mode). A graph break, several
    graphs or Dynamo's own failure is a one-line PyfxprofError.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()).eval()
        >>> x = torch.ones(1, 2)
        >>> live = LiveCall.of(model.forward, model)
        >>> gm, frame = frame_capture(live, BoundInputs((x,)), "Seq")
        >>> frame.run_graph_with(lambda flat: gm(*flat))
        >>> torch.equal(frame.call(BoundInputs((x,))), model(x)), frame.accepts(BoundInputs((x,)))
        (True, True)
    """
    relay = _Relay()
    graphs: list = []

    def backend(gm: fx.GraphModule, _example_inputs: list) -> Callable:
        graphs.append(gm)
        relay.runner = lambda flat: gm(*flat)
        return relay

    try:
        with live.mode(), _argument_ints_dynamic():
            found = run_dynamo(live.target, bound, backend, _dynamic_beyond_first, live.family)
        entries = found.cache_entries
        if found.breaks or len(entries) != 1:
            raise PyfxprofError(f"TorchDynamo breaks the graph of {name} "
                                f"({'; '.join(first_line(r) for r in found.breaks[:2])})")
        function = types.FunctionType(entries[0].code, found.entry.__globals__, "captured")
        frame = DynamoFrame(live.target, function, entries[0].guard_manager, relay)
    except PyfxprofError:
        raise
    except Exception as error:  # Dynamo's own failures become one line
        raise PyfxprofError(f"TorchDynamo cannot capture {name}: {type(error).__name__}: "
                            f"{first_line(error)[:200]}") from None
    return with_module_stacks(graphs[0], name), frame


def _dynamic_beyond_first(copied: BoundInputs) -> None:
    """Mark every dimension of every tensor of the call but the first top-level one
    dynamic, where Dynamo can keep it so (a cache's length, a growing attention mask)."""
    import torch._dynamo

    top = [v for v in (*copied.args, *copied.kwargs.values()) if isinstance(v, torch.Tensor)]
    for tensor in input_tensors(copied):
        if top and tensor is top[0]:
            continue
        for dim in range(tensor.dim()):
            torch._dynamo.maybe_mark_dynamic(tensor, dim)


#: Dynamo sources of the call's arguments' attributes (a cache's lengths and offsets, at any
#: depth): ``L['args'][3].layers[0].cumulative_length``, ``L['kwargs']['cache'].offset``.
ARGUMENT_ATTRIBUTES = r"L\['(args|kwargs)'\]\[[^]]+\]\..+"


def _argument_ints_dynamic() -> Any:
    """Dynamo's config for one capture: Python ints read from attributes of the call's
    arguments are symbolic from the first capture (torch.compiler.config.dynamic_sources),
    where Dynamo would pin them and recompile once they change: a sliding-window cache
    keeps its length in such an int (transformers' DynamicSlidingWindowLayer
    ``cumulative_length``), so each decode step would otherwise need a capture of its own."""
    import torch.compiler

    current = torch.compiler.config.dynamic_sources
    return torch.compiler.config.patch(
        dynamic_sources=f"{current},{ARGUMENT_ATTRIBUTES}" if current else ARGUMENT_ATTRIBUTES)
