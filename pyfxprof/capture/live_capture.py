"""The Profiler's capture of a call group: the caller's own call made by Dynamo, as
torch.compile makes it (dynamo_frame.py's DynamoFrame keeps Dynamo's code and graphs for the
later calls), with copies of each graph's inputs for the analysis and a record of what the
call changed (Dynamo's side effects; every storage a graph wrote, by any path)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx

from . import dynamo_frame
from .dynamo import break_reasons, graphs_of, run_dynamo, with_module_stacks
from .dynamo_frame import (DynamoFrame, LiveCall, Relay, argument_ints_dynamic,
                           dynamic_beyond_first, frame_of)
from .inputs import BoundInputs, input_tensors
from .instances import locate, modules_of
from .storage_writes import run_noting_writes, storage_key
from .unguarded_reads import guarding_unguarded_reads, unguarded_reads
from .unguarded_stores import unguarded_stores


@dataclass
class LiveCapture:
    """What live_capture left: the call's own `output`; the graph with module stacks (None:
    several graphs or none) and the DynamoFrame (None: Dynamo made no code to run again,
    `note` says why), its `replay` set to the graph runs of the call (`runs`: those runs,
    (graph, a copy of its flat inputs taken as it started)); `pure`: whether
    Dynamo's code changes nothing but the call's arguments (its own record of side effects,
    and no input of the graphs but the arguments' tensors written), so that running it on
    copies of the arguments leaves every other object as it is."""

    output: Any
    graph: fx.GraphModule | None
    frame: DynamoFrame | None
    note: str
    pure: bool
    runs: list[tuple[int, tuple]] = field(default_factory=list)


class _Snapshots:
    """A Dynamo backend whose relays copy each graph's flat inputs at each run of the live
    call (before the graph writes any) and record Dynamo's side effects of each frame."""

    def __init__(self, modules: dict[int, str] | None) -> None:
        self.modules = modules  # (instances.modules_of the call's target)
        self.located: list = []  # (graph, Instance) of each run (DynamoFrame.locating's)
        self.relays: list[Relay] = []
        self.runs: list[tuple[int, tuple]] = []
        self.versions: list[tuple[torch.Tensor, int]] = []
        self.untracked: list[torch.Tensor] = []  # inference tensors: no version counter
        self.written: set[tuple[str, int]] = set()  # storages the graphs wrote, any path
        self.outside_effects = False
        self.unguarded: list[str] = []  # attributes Dynamo's code would store stale values in
        self.unguarded_reads: list[str] = []  # what its trace read with no guard on it

    def __call__(self, gm: fx.GraphModule, _example_inputs: list) -> Relay:
        self.outside_effects |= not _effects_on_arguments_only()
        self.unguarded += unguarded_stores()
        self.unguarded_reads += unguarded_reads()
        graph = len(self.relays)
        relay = Relay(lambda flat: self._run(graph, gm, flat))
        self.relays.append(relay)
        return relay

    def _run(self, graph: int, gm: fx.GraphModule, flat: tuple) -> Any:
        tensors = [t for t in flat if isinstance(t, torch.Tensor)]
        self.versions.extend((t, t._version) for t in tensors if not t.is_inference())
        self.untracked.extend(t for t in tensors if t.is_inference())
        self.runs.append((graph, tuple(_snapshot(value) for value in flat)))
        if self.modules is not None:
            self.located.append((graph, locate(self.modules, live_capture.__code__,
                                               frozenset({__file__, dynamo_frame.__file__}))))
        output, written = run_noting_writes(lambda: gm(*flat))
        self.written |= written
        return output


def _snapshot(value: Any) -> Any:
    """A copy of a graph input for the analysis (a parameter as it is: see live_capture)."""
    if not isinstance(value, torch.Tensor) or isinstance(value, torch.nn.Parameter):
        return value
    return _copy(value)


def _copy_written_parameters(runs: list[tuple[int, tuple]], changed: list) -> None:
    """Parameters the call wrote (in place, through ``.data`` or a view) replaced in the
    runs' inputs by copies of their values now, so that replaying a run (the analysis, the
    timed run of this call) never writes the model's parameter again."""
    written = {id(t) for t in changed if isinstance(t, torch.nn.Parameter)}
    if written:
        runs[:] = [(graph, tuple(_copy(v) if id(v) in written else v for v in flat))
                   for graph, flat in runs]


def _copy(tensor: torch.Tensor) -> torch.Tensor:
    with torch.no_grad(), torch.inference_mode(tensor.is_inference()):
        return tensor.detach().clone()


def _effects_on_arguments_only() -> bool:
    """Whether the frame Dynamo is compiling changes Python objects only where they come
    from the call's arguments (or are new), by Dynamo's own record of its side effects."""
    from torch._dynamo.symbolic_convert import InstructionTranslator

    try:
        effects = InstructionTranslator.current_tx().output.side_effects
        if effects.tensor_hooks or effects.save_for_backward:
            return False
        for variable in list(effects.id_to_variable.values()):
            if effects.is_modified(variable):
                source = getattr(variable, "source", None)
                name = getattr(source, "name", "")
                name = name() if callable(name) else name  # (a method before torch 2.10)
                if source is not None and not name.startswith(("L['args']", "L['kwargs']")):
                    return False
    except Exception:  # (Dynamo's record cannot be read: say not)
        return False
    return True


def live_capture(live: LiveCall, bound: BoundInputs, name: str) -> LiveCapture:
    """The caller's call ``live.target(*bound.args, **bound.kwargs)`` made by Dynamo, as
    torch.compile makes it (its guards, its code replaying the call's side effects, the
    model's Python at graph breaks, a frame it cannot compile run as it is), each graph run
    as it is; with the graph(s) and Dynamo's code for the Profiler's later calls of the
    signature. Nothing of the model runs twice: the analysis replays the graphs on copies of
    their inputs (`DynamoFrame.replay`; a parameter the call wrote, by any path, replaced by
    a copy: _copy_written_parameters). The caller's own exception propagates."""
    snapshots = _Snapshots(modules_of(live.target))
    with argument_ints_dynamic(), guarding_unguarded_reads():
        found = run_dynamo(live.target, bound, snapshots, dynamic_beyond_first, live.family,
                           isolated=True, live=True)
    changed = [t for t, version in snapshots.versions
               if t._version != version or storage_key(t) in snapshots.written]
    changed += snapshots.untracked  # (may have been written: counted as written)
    if not found.graphs or len(found.cache_entries) != 1 or not snapshots.runs \
            or len(snapshots.relays) != len(found.graphs):
        why = "; ".join(break_reasons(found.breaks)[:2]) or "no graph ran"
        return LiveCapture(found.output, None, None, f"TorchDynamo made no graph of {name} "
                           f"it can run again ({why})", False)
    if snapshots.unguarded:
        stores = ", ".join(snapshots.unguarded[:3])
        return LiveCapture(found.output, None, None, f"TorchDynamo stores {stores} in {name} "
                           "without a guard on it (its code would store a stale value)", False)
    if snapshots.unguarded_reads:
        reads = ", ".join(snapshots.unguarded_reads[:3])
        return LiveCapture(found.output, None, None, f"TorchDynamo's trace of {name} read "
                           f"{reads} without a guard on it (a later call could read otherwise)",
                           False)
    _copy_written_parameters(snapshots.runs, changed)
    split = bool(found.breaks) or len(snapshots.relays) != 1
    frame = frame_of(found, live.target, snapshots.relays, nested=split)
    frame.replay = snapshots.runs
    frame._located = snapshots.located if snapshots.modules is not None else None
    arguments = {id(t) for t in input_tensors(bound)}
    pure = not (split or snapshots.outside_effects
                or any(id(t) not in arguments for t in changed))
    if split:
        frame.graphs = graphs_of(found, name, "function")
        return LiveCapture(found.output, None, frame, "", False, snapshots.runs)
    return LiveCapture(found.output, with_module_stacks(found.graphs[0][0], name), frame, "",
                       pure, snapshots.runs)
