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

A call Dynamo splits into several graphs (graph breaks) is a DynamoFrame too
(`graphs_capture` for profile()'s dynamo rung, `frame_capture` for the Profiler's): Dynamo's
code then calls resume functions and the model's own nested frames, which run the code
Dynamo compiled for them only under its frame hook, so such a frame's calls run under
``torch._dynamo.run`` (cached code only, never a new compile), exactly as
``torch.compile(backend="eager")`` runs them, each graph behind a relay of its own.

Dimensions the Profiler's call groups do not pin (every tensor but the first one, so a
cache growing by one position per decode step) are marked dynamic, so one capture serves
every decode step.
"""

from __future__ import annotations

import functools
import operator
import types
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
import torch.fx as fx

from ..errors import PyfxprofError, first_line
from .dynamo import DynamoRun, break_reasons, graphs_of, one_graph, run_dynamo, with_module_stacks
from .inputs import BoundInputs, input_tensors
from .instances import locate, modules_of


@dataclass(frozen=True)
class LiveCall:
    """How the caller's real calls run: what they call (the model's own ``forward``), in
    which autograd mode, and each module's training flag (``model.modules()`` order). The
    capture runs in that autograd mode and with those flags (Dynamo's guards check both).

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
    flags: tuple[bool, ...]
    refused: str | None = None  # why the dynamo rung may not serve these calls (None: it may)
    family: str | None = None  # captures of one signature share Dynamo's automatic dynamic

    @classmethod
    def of(cls, target: Callable, model: torch.nn.Module) -> "LiveCall":
        """`target` called in the current autograd mode, `model` in its current mode."""
        return cls(target, torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
                   tuple(module.training for module in model.modules()))

    @property
    def training(self) -> bool:
        """Whether a module of the model is in training mode."""
        return any(self.flags)

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


class Relay:
    """Dynamo's compiled graph as its generated code calls it: hands the graph's flat inputs
    to `runner` (the graph itself until an instrumented executor takes over). With `noted`
    set (DynamoFrame.note_sizes), each call first appends ``pick(flat)``, the values of the
    graph's size inputs (the shapes each call ran at): one list append per call."""

    def __init__(self, runner: Callable[[tuple], Any]) -> None:
        self.runner = runner
        self.noted: list | None = None
        self.pick: Callable[[tuple], Any] = tuple

    def __call__(self, *flat: Any) -> Any:
        if self.noted is not None:
            self.noted.append(self.pick(flat))
        return self.runner(flat)


def _left_out(_flat: tuple) -> None:
    raise PyfxprofError("Dynamo's code ran a graph that the analysis run did not (its inputs "
                        "take another branch); profile it with capture='hooks'")


class _Instances:
    """The runner of a relay whose graph runs for several module instances in a call: the
    relay's k-th run in a call goes to the runner of `graphs[k]`, the graph of that run's
    instance (DynamoFrame.keep); `runs` counts the call's runs so far."""

    def __init__(self, graphs: list[int], runner: Callable[[tuple], Any]) -> None:
        self.graphs, self.runs = graphs, 0
        self.runners = {graph: runner for graph in graphs}

    def __call__(self, flat: tuple) -> Any:
        k = self.runs
        self.runs = k + 1
        return self.runners[self.graphs[min(k, len(self.graphs) - 1)]](flat)


def _relaying(relays: list[Relay]) -> Callable:
    """A Dynamo backend returning, for each graph, a new relay (kept in `relays`) that runs
    the graph itself until run_graph_with says otherwise."""
    def backend(gm: fx.GraphModule, _example_inputs: list) -> Relay:
        relay = Relay(lambda flat: gm(*flat))
        relays.append(relay)
        return relay
    return backend


@dataclass
class DynamoFrame:
    """Dynamo's generated code for one call signature, with each graph behind a relay.

    `call(bound)` makes the call as the model would (outputs, identities, side effects);
    `accepts(bound)` checks Dynamo's guards for the call; `run_graph_with(runner, k)` routes
    graph k's flat inputs to `runner(flat) -> flat outputs` (an executor's ``run``).
    `graphs` (several graphs only): the graphs, with module stacks, in the order they first
    run (after `keep`, one per module instance a Dynamo graph ran for, its module paths the
    model's: ``blocks.2.a``, not the frame's ``a``); `order`: the graphs a call runs, in turn
    (empty: each once; a graph break inside a loop runs a graph several times); `breaks`:
    the first line of each graph-break reason; `origins`: after `keep`, the name each node of
    `graphs` had in the graph it was copied from (where it differs).
    """

    target: Callable
    function: Callable
    guards: Any
    relays: list[Relay]
    graphs: list[fx.GraphModule] = field(default_factory=list)
    breaks: list[str] = field(default_factory=list)
    order: list[int] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)
    _relay_of: list[int] = field(default_factory=list)  # graph -> relay (after keep)
    _located: list | None = None  # (graph, Instance) of each graph run while locating
    _instances: list[_Instances] = field(default_factory=list)  # relays' runners (keep)
    #: A live capture's graph runs, (graph, a copy of its flat inputs), that the next
    #: ``call`` replays instead of running Dynamo's code (the analysis: no Python of the
    #: model runs again); None once replayed.
    replay: list[tuple[int, tuple]] | None = None
    _positional: tuple | None = None  # what `positional` gives, made once

    def accepts(self, bound: BoundInputs) -> bool:
        """Whether Dynamo's guards hold for this call (shapes, dtypes, flags, the cache's
        layout, the autograd mode...): only then is the captured code valid for it."""
        return bool(self.guards.root.check({"target": self.target, "args": bound.args,
                                            "kwargs": bound.kwargs}))

    def positional(self) -> tuple | None:
        """(the call of a tuple of positional arguments made by Dynamo's code; Dynamo's
        guards for such a call, (check, frame locals): check(frame locals) with "args" set to
        the tuple is `accepts`): what the Profiler's hot path (C) checks and runs per call,
        as `accepts` and `call` would. None where a call needs `call` (graph breaks, a graph
        run several times in a call, a live capture's replay not made yet).

        Example:
            >>> relu = torch.nn.ReLU(); x = -torch.ones(2)
            >>> _, frame = frame_capture(LiveCall.of(relu.forward, relu), BoundInputs((x,)), "R")
            >>> run, (check, frame_locals) = frame.positional()
            >>> check({**frame_locals, "args": (x,)}), run((x,)).tolist()
            (True, [0.0, 0.0])
        """
        if self._positional is None and self.replay is None and not self._instances \
                and len(self.relays) == 1 and type(self.function) is types.FunctionType:
            keywords: dict = {}  # (the frame's kwargs: the guards read the one the code gets)
            function = types.FunctionType(self.function.__code__, self.function.__globals__,
                                          self.function.__name__, (keywords,),
                                          self.function.__closure__)
            self._positional = (functools.partial(function, self.target),
                                (self.guards.root.check,
                                 {"target": self.target, "args": None, "kwargs": keywords}))
        return self._positional

    def refusal(self, bound: BoundInputs) -> str:
        """The first of Dynamo's guards that refuses this call, as Dynamo prints it
        (e.g. ``L['args'][3].layers[0].cumulative_length == 8``)."""
        failure = self.guards.check_verbose({"target": self.target, "args": bound.args,
                                             "kwargs": bound.kwargs})
        parts = getattr(failure, "verbose_code_parts", None) or ["an unnamed guard"]
        return parts[0].split("  #")[0].strip()

    def call(self, bound: BoundInputs) -> Any:
        """The call ``target(*bound.args, **bound.kwargs)`` made by the captured code (or
        the replay of a live capture's graph runs, once: see `replay`)."""
        for instances in self._instances:
            instances.runs = 0
        if self.replay is not None:
            runs, self.replay = self.replay, None
            for graph, flat in runs:
                self.relays[graph].runner(flat)
            return None
        return self.function(self.target, bound.args, bound.kwargs)

    def note_sizes(self, positions: list[int]) -> list | None:
        """From now on each call of the (one) graph appends the values of its inputs at
        `positions` (its size symbols, capture.call_dims.size_symbols) to the list returned
        (a tuple of them; for one position the value itself, as operator.itemgetter gives
        it). No positions, or several graphs: nothing is noted (None)."""
        if not positions or len(self.relays) != 1 or self._instances:
            return None
        relay = self.relays[0]
        relay.pick, relay.noted = operator.itemgetter(*positions), []
        return relay.noted

    def run_graph_with(self, runner: Callable[[tuple], Any], graph: int = 0) -> None:
        """Run graph number `graph` with `runner` from now on."""
        relay = self.relays[self._relay_of[graph] if self._relay_of else graph]
        if isinstance(relay.runner, _Instances):
            relay.runner.runners[graph] = runner
        else:
            relay.runner = runner

    @contextmanager
    def locating(self) -> Iterator[None]:
        """Inside, each graph run records the module instance it runs for (the model's
        modules on the stack, capture/instances.py), which `keep` makes graphs of their own;
        nothing is recorded when the call's target belongs to no module."""
        modules = modules_of(self.target)
        if modules is None or (self.replay is not None and self._located is not None):
            yield  # (a live capture's runs were located as the live call made them)
            return
        located: list = []
        runners = [relay.runner for relay in self.relays]
        stop, skipped = DynamoFrame.call.__code__, frozenset({__file__})
        for graph, relay in enumerate(self.relays):
            def locating(flat: tuple, graph: int = graph, run: Callable = runners[graph]) -> Any:
                located.append((graph, locate(modules, stop, skipped)))
                return run(flat)
            relay.runner = locating
        try:
            yield
        finally:
            for relay, runner in zip(self.relays, runners):
                relay.runner = runner
            self._located = located

    def release(self) -> None:
        """Let go of what the graphs' runners hold (instrumented graphs, tables): Dynamo's
        cache keeps the relays for as long as it keeps the code; a call after this raises.
        """
        for relay in self.relays:
            relay.runner = _left_out

    def keep(self, order: list[int]) -> None:
        """Keep the graphs numbered in `order` (the graphs a call runs, in the order it runs
        them, a graph in a loop once per run) as graphs 0, 1, ... in the order they first
        run, and `order` renumbered as the call's `order`; a graph left out that runs later
        raises a one-line PyfxprofError. Where the runs were located (`locating`), a graph
        that ran for several module instances is kept once per instance, each copy with the
        instance's module paths and its own node names (`origins`).

        Example:
            >>> frame = DynamoFrame(None, None, None, [Relay(_left_out) for _ in "abc"],
            ...                     ["g0", "g1", "g2"])
            >>> frame.keep([2, 1, 2]); frame.graphs, frame.order
            (['g2', 'g1'], [0, 1, 0])
        """
        located = self._located if self._located is not None else []
        self._located = None
        runs = ([(graph, where) for graph, where in located]
                if [graph for graph, _ in located] == order else [(g, None) for g in order])
        kept = list(dict.fromkeys(order))
        for graph in set(range(len(self.relays))) - set(kept):
            self.relays[graph].runner = _left_out
        kinds = list(dict.fromkeys(runs))  # (graph, instance) in the order they first run
        self.graphs = self._at_instances(kinds)
        self.relays = [self.relays[graph] for graph in kept]
        self.order = [kinds.index(run) for run in runs]
        self._relay_of = [kept.index(graph) for graph, _ in kinds]
        for relay, graph in zip(self.relays, kept):
            rows = [kinds.index(run) for run in runs if run[0] == graph]
            if len(set(rows)) > 1:
                instances = _Instances(rows, relay.runner)
                relay.runner = instances
                self._instances.append(instances)

    def _at_instances(self, kinds: list[tuple[int, Any]]) -> list:
        """Graph `graph` at `instance` for each (graph, instance) of `kinds` (the graph
        itself where no run was located); node names kept apart across the copies."""
        if all(instance is None for _, instance in kinds):
            return [self.graphs[graph] for graph, _ in kinds]
        taken: set[str] = set()
        graphs = []
        for graph, instance in kinds:
            source = self.graphs[graph]
            copy = with_module_stacks(source, type(source).__name__, taken, instance)
            self.origins.update((new.name, old.name) for new, old in
                                zip(copy.graph.nodes, source.graph.nodes) if new.name != old.name)
            graphs.append(copy)
        return graphs


def frame_capture(live: LiveCall, bound: BoundInputs,
                  name: str) -> tuple[fx.GraphModule | None, DynamoFrame]:
    """(the graph, with module stacks, and the DynamoFrame running it) of ``live.target``
    called on `bound` (run on a copy, in ``live``'s autograd mode). A call Dynamo splits
    (graph breaks) gives (None, a DynamoFrame holding its graphs, run as graphs_capture's
    are); Dynamo's own failure, or a split with no graph or no code to run again, is a
    one-line PyfxprofError.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()).eval()
        >>> x = torch.ones(1, 2)
        >>> live = LiveCall.of(model.forward, model)
        >>> gm, frame = frame_capture(live, BoundInputs((x,)), "Seq")
        >>> frame.run_graph_with(lambda flat: gm(*flat))
        >>> torch.equal(frame.call(BoundInputs((x,))), model(x)), frame.accepts(BoundInputs((x,)))
        (True, True)
    """
    relays: list[Relay] = []
    try:
        with live.mode(), argument_ints_dynamic():
            found = run_dynamo(live.target, bound, _relaying(relays), dynamic_beyond_first,
                               live.family, isolated=True)
        if not found.graphs or len(found.cache_entries) != 1:
            raise PyfxprofError(f"TorchDynamo made no graph of {name} it can run again "
                                f"({'; '.join(break_reasons(found.breaks)[:2])})")
        split = bool(found.breaks) or len(relays) != 1
        frame = frame_of(found, live.target, relays, nested=split)
        if split:
            frame.graphs = graphs_of(found, name, "function")
    except PyfxprofError:
        raise
    except Exception as error:  # Dynamo's own failures become one line
        raise _failed(name, error) from None
    return (None, frame) if split else (with_module_stacks(found.graphs[0][0], name), frame)


def graphs_capture(model: torch.nn.Module, bound: BoundInputs, granularity: str
                   ) -> tuple[fx.GraphModule, list] | DynamoFrame:
    """profile()'s Dynamo capture of ``model(*bound.args, **bound.kwargs)`` (run on a copy):
    one graph as dynamo.one_graph gives it (run on its own, its inputs found again in each
    call), or a DynamoFrame holding the graphs of a call Dynamo split into several.

    Example:
        >>> class Broken(torch.nn.Module):
        ...     def forward(self, x):
        ...         x = x + 1
        ...         torch._dynamo.graph_break()
        ...         return x * 2
        >>> frame = graphs_capture(Broken(), BoundInputs((torch.ones(2),)), "function")
        >>> len(frame.graphs), frame.call(BoundInputs((torch.ones(2),))).tolist()
        (2, [4.0, 4.0])
    """
    name = type(model).__name__
    relays: list[Relay] = []
    try:
        found = run_dynamo(model, bound, _relaying(relays), isolated=True)
        if len(found.graphs) == 1:  # Python after a break (no other graph) stays out
            return one_graph(found, model, granularity)
        if not found.graphs or len(found.cache_entries) != 1:
            raise PyfxprofError(f"TorchDynamo made no graph of {name} it can run again "
                                f"({'; '.join(break_reasons(found.breaks)[:2])})")
        frame = frame_of(found, model, relays, nested=True)
        frame.graphs = graphs_of(found, name, granularity)
    except PyfxprofError:
        raise
    except Exception as error:  # Dynamo's own failures become one line
        raise _failed(name, error) from None
    return frame


def frame_of(found: DynamoRun, target: Callable, relays: list[Relay],
           nested: bool) -> DynamoFrame:
    """The DynamoFrame of `found`'s one cache entry; `nested`: its calls run under Dynamo's
    frame hook in run-only mode, in the capture's isolate_recompiles region (resume
    functions and nested frames run the code cached for them there)."""
    entry = found.cache_entries[0]
    # (pyright binds a FunctionType-typed dataclass field as a method: MethodType)
    namespace = found.entry.__globals__  # pyright: ignore[reportAttributeAccessIssue]
    function = types.FunctionType(entry.code, namespace, "captured")
    if nested:
        from torch._dynamo.eval_frame import RunOnlyContext
        run_only = RunOnlyContext()
        run_only._isolate_recompiles_id = found.region
        function = run_only(function)
    return DynamoFrame(target, function, entry.guard_manager, relays,
                       breaks=break_reasons(found.breaks))


def _failed(name: str, error: Exception) -> PyfxprofError:
    """Dynamo's own failure as one line."""
    return PyfxprofError(f"TorchDynamo cannot capture {name}: {type(error).__name__}: "
                         f"{first_line(error)[:200]}")


def dynamic_beyond_first(copied: BoundInputs) -> None:
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


def argument_ints_dynamic() -> Any:
    """Dynamo's config for one capture: Python ints read from attributes of the call's
    arguments are symbolic from the first capture (torch.compiler.config.dynamic_sources),
    where Dynamo would pin them and recompile once they change: a sliding-window cache
    keeps its length in such an int (transformers' DynamicSlidingWindowLayer
    ``cumulative_length``), so each decode step would otherwise need a capture of its own."""
    import torch.compiler

    current = torch.compiler.config.dynamic_sources
    # (install_config_module adds patch at run time; torch.compiler.config's stubs lack it)
    return torch.compiler.config.patch(  # type: ignore[attr-defined]
        dynamic_sources=f"{current},{ARGUMENT_ATTRIBUTES}" if current else ARGUMENT_ATTRIBUTES)
