"""The Profiler's call groups: calls of a model grouped by input signature (a prefill and a
decode step of ``generate`` are two groups), each captured, analysed and instrumented once.

The analysis run of a group never sees the caller's own arguments: it runs on copies
(tensors detached and cloned, other objects such as KV caches deep-copied), so a cache the
caller owns is not appended to and in-place state is untouched.
"""

from __future__ import annotations

import inspect
import time
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import pandas as pd
import torch

from ..capture.call_dims import call_dims, size_symbols
from ..capture.shape_run import describe
from ..capture.dynamo_frame import LiveCall
from ..capture.live_capture import live_capture
from ..capture.hook_analysis import Leaves
from ..capture.inputs import BoundInputs, copied_alike
from ..capture.memory import profiling_memory
from ..capture.model_state import dtype_name, evaluation_mode, forked_rng
from ..capture.placement import device_of
from ..capture.source import keeping_library_frames
from ..data.rungs import DYNAMO, HOOKS
from ..capture.tracing import Capture
from ..run.arguments import CAPTURE, CaptureOptions
from ..errors import PyfxprofError, first_line
from ..timing.device_events import ensure_cuda_runtime
from ..timing.executors import Executor, executor_for
from ..timing.graph_spans import GraphsExecutor
from ..timing.hook_timing import HooksExecutor
from ..capture.ladder import live_prepared, prepare, warn_fallback

#: Distinct input signatures a Profiler captures; calls of further ones run unprofiled.
MAX_CALL_GROUPS = 16
#: Captures of one signature (the first and the variants its Dynamo guards asked for); the
#: last one is not a Dynamo capture, so it takes every further call.
MAX_GUARD_VARIANTS = 4
_FLAGS = (bool, type(None))
_VARIANT = "guard variant"


def signature_key(bound: BoundInputs) -> tuple:
    """What groups calls (their inputs bound by capture.inputs.bind_inputs): each argument's
    position or keyword and kind, with the full shape of the first tensor argument only.
    Other tensors count by dtype and rank, so a mask growing by one position each decode
    step keeps its calls in one group; flags (bools, None) count by value, other objects (a
    KV cache) by type.

    Example:
        >>> ids, mask = torch.zeros(1, 8, dtype=torch.long), torch.ones(1, 9)
        >>> signature_key(BoundInputs((ids, mask), {"use_cache": True}))
        ((0, 'int64', (1, 8)), (1, 'float32', 2), ('use_cache', True))
    """
    key: list[tuple] = []
    primary_seen = False
    for items in (enumerate(bound.args), bound.kwargs.items()):
        for name, value in items:
            if isinstance(value, torch.Tensor):
                dtype = (_DTYPE_NAMES.get(value.dtype)
                         or _DTYPE_NAMES.setdefault(value.dtype, dtype_name(value.dtype)))
                key.append((name, dtype, value.dim() if primary_seen else tuple(value.shape)))
                primary_seen = True
            elif isinstance(value, _FLAGS):
                key.append((name, value))
            else:
                key.append((name, type(value).__name__))
    return tuple(key)


def args_key(args: tuple) -> tuple:
    """The key of a call made with positional arguments only, in the Profiler's table of
    the groups whose graph takes such a call as it is (the loop's hot path): calls with
    one args_key have one signature_key, and it costs about a third of one (dtypes and
    shapes as torch gives them, no names).

    Example:
        >>> args_key((torch.zeros(2, 3),)) == args_key((torch.ones(2, 3),))
        True
        >>> args_key((torch.zeros(2, 3), None)) == args_key((torch.zeros(3, 2), None))
        False
    """
    if len(args) == 1 and isinstance(args[0], torch.Tensor):  # one tensor: (dtype, shape)
        return args[0].dtype, args[0].shape
    key: list[Any] = []
    primary_seen = False
    for value in args:
        if isinstance(value, torch.Tensor):
            key.append((value.dtype, value.dim() if primary_seen else value.shape))
            primary_seen = True
        elif value is None or value is True or value is False:
            key.append(value)
        else:
            key.append(type(value))
    return tuple(key)


#: dtype_name's answers, kept: signature_key runs at every call of the loop.
_DTYPE_NAMES: dict[torch.dtype, str] = {}


def call_label(args: tuple, kwargs: dict) -> str:
    """A call's inputs as a group's label: its shapes and dtypes, keywords by name.

    Example:
        >>> call_label((torch.zeros(2),), {}), call_label((), {"x": torch.zeros(2)})
        ('([2] float32)', '{x: [2] float32}')
    """
    return describe(args) if not kwargs else describe({**dict(enumerate(args)), **kwargs})


def next_variant(key: tuple) -> tuple:
    """The key of the next capture of one signature, for calls the Dynamo guards of the
    group under `key` refuse (a cache of another layout, a changed autograd mode).

    Example:
        >>> next_variant(next_variant((("x", "float32", (2,)),)))
        (('x', 'float32', (2,)), ('guard variant', 3))
    """
    if key and key[-1][0] == _VARIANT:
        return (*key[:-1], (_VARIANT, key[-1][1] + 1))
    return (*key, (_VARIANT, 2))


def primary_shape(key: tuple) -> tuple | None:
    """The shape of the first tensor argument recorded in a signature key (None: no tensor).

    Example:
        >>> primary_shape((("x", "float32", (2, 3)), ("y", "float32", 2)))
        (2, 3)
    """
    return next((entry[2] for entry in key if len(entry) == 3 and isinstance(entry[2], tuple)),
                None)


def analysis_copy(value: Any, memo: dict | None = None) -> Any:
    """A copy of call arguments the analysis run may consume: tensors detached and cloned,
    tuples, lists and dicts copied item by item, other objects (caches) deep-copied. A
    tensor passed twice (``input_ids=ids, labels=ids``) is one copy passed twice: Dynamo's
    guards check that the real calls alias their tensors as the captured call did.

    Example:
        >>> x = torch.zeros(2); y = analysis_copy({"x": x, "y": x}); _ = y["x"].add_(1)
        >>> x.tolist(), y["y"].tolist()
        ([0.0, 0.0], [1.0, 1.0])
    """
    memo = {} if memo is None else memo
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:  # an inference tensor where the caller's is (guards)
            with torch.inference_mode(value.is_inference()):
                memo[id(value)] = value.detach().clone()
        return memo[id(value)]
    if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
        return type(value)(analysis_copy(item, memo) for item in value)
    if isinstance(value, dict):
        return {name: analysis_copy(item, memo) for name, item in value.items()}
    if isinstance(value, (bool, int, float, str, type(None), torch.dtype, torch.device)):
        return value
    try:
        return copied_alike(value, memo)
    except Exception as error:
        raise PyfxprofError(
            f"cannot copy a {type(value).__name__} argument for pyfxprof's analysis run "
            f"({type(error).__name__}: {first_line(error)}); the model is never analysed on "
            "the caller's own stateful arguments — pass example_inputs the Profiler can "
            "copy") from None


@dataclass
class CallGroup:
    """The calls of one input signature: their capture, executor and nodes table (shapes
    and FLOPs from the group's own analysis run)."""

    index: int
    key: tuple
    label: str
    capture: Capture
    frame: pd.DataFrame
    flops: int
    executor: Executor
    training: bool
    device: str
    capture_ns: int = 0  # the Profiler's time spent capturing and analysing the group
    graph_takes_bound: bool = False  # a graph whose inputs are the call bound to forward
    cached: bool = False  # taken from the capture cache (capture_ns: the look-up)
    backward_note: str | None = None  # Profiler(backward=True): why no backward is timed
    #: Whether Dynamo's code, run on copies of a call's arguments, changes nothing else (no
    #: Python object outside the arguments, no tensor of the model: live_capture's `pure`).
    pure: bool = False
    #: The graph's size symbols (a Dynamo graph with dynamic dimensions: a decode step's
    #: cache length), and per instrumented run since the last reset their values (a tuple,
    #: or the value itself for one symbol), noted by the graph's relay (note_sizes).
    sizes: tuple[str, ...] = ()
    noted: list = field(default_factory=list)

    def __post_init__(self) -> None:
        #: True when the model runs itself with marking hooks (hooks or whole capture).
        self.hooks = self.executor.mode == HOOKS
        #: A traced graph run by its executor on the call's positional arguments.
        self.graph_run = not self.hooks and self.capture.frame is None
        #: A call Dynamo split: its executor makes the call with Dynamo's code (graph_spans).
        self.graphs = (self.capture.mode == DYNAMO and self.capture.frame is not None
                       and self.capture.graph_module is None)

    def reset(self) -> None:
        """Drop the runs recorded so far (the executor's and the sizes noted for them)."""
        self.executor.reset()
        self.noted.clear()

    def note(self, flat: tuple) -> None:
        """Note the sizes of a run of the graph that does not go through its relay (the
        capture call's graph run on its copied inputs)."""
        if self.sizes and self.capture.frame is not None:
            self.noted.append(self.capture.frame.relays[0].pick(flat))

    def accepts(self, bound: BoundInputs) -> bool:
        """Whether the group's capture is valid for this call (bound to the model's forward):
        a Dynamo capture checks Dynamo's guards; the others take every call of the group."""
        return self.capture.frame is None or self.capture.frame.accepts(bound)

    def inputs(self, args: tuple, kwargs: dict, bound: BoundInputs) -> BoundInputs:
        """The call's arguments as the executor takes them; `bound` is the call bound to the
        model's forward (what a Dynamo capture takes as it is)."""
        if self.hooks:
            return BoundInputs(args, kwargs)
        if self.capture.frame is not None or self.graph_takes_bound:
            return bound
        return BoundInputs(self.capture.graph_args(args, kwargs))

    def run(self, inputs: BoundInputs) -> Any:
        """One timed call (module hooks, under a hooks capture, exist only during it)."""
        if self.graph_run:
            return self.executor.run(inputs.args)
        executor = self.executor
        if self.hooks:
            assert isinstance(executor, HooksExecutor)
            with executor:
                return executor.run(inputs.args, inputs.kwargs)
        if self.graphs:
            assert isinstance(executor, GraphsExecutor)
            return executor.call(inputs)
        return self.capture.frame.call(inputs)  # Dynamo's code runs the executor's graph


def capture_group(model: torch.nn.Module, args: tuple, kwargs: dict, key: tuple, index: int,
                  call_target: Callable | None = None, refusal: str | None = None,
                  options: CaptureOptions = CAPTURE, device_events: bool | None = None,
                  capture_mode: str = "auto") -> CallGroup:
    """Capture ``model`` for calls like ``model(*args, **kwargs)`` as
    ``pyfxprof.profile(capture="auto")`` does, run the untimed analysis on copies of the
    arguments in eval mode without grad (flags restored), and build the executor.
    `call_target` is what a hooks executor calls (default: the model). Captures of one
    signature (its guard variants) share Dynamo's automatic-dynamic state (capture/dynamo.py
    _entry): a Python int the first capture's guards pinned (a sliding-window cache's
    length) is captured dynamic by the second. `refusal`: the guard that refused the call
    a variant is captured for, named in the warning of the last variant. `options`: the
    tracer's and the analysis run's (profile_memory, library_frames), as profile() takes
    them; `device_events`: False times a CUDA model on the host only (None, True: with CUDA
    events).
    `capture_mode`: "auto" (the ladder) or "hooks" (the model's own code, for a forward
    that changes Python state).

    Example:
        >>> g = capture_group(torch.nn.Linear(2, 2), (torch.zeros(1, 2),), {}, (), 0)
        >>> g.frame["output_shapes"].tolist()[-1], g.hooks, g.label
        ('[1, 2] float32', False, '([1, 2] float32)')
    """
    started = time.perf_counter_ns()
    label = call_label(args, kwargs)
    base = key[:-1] if key and key[-1][0] == _VARIANT else key
    live = replace(LiveCall.of(call_target or model.forward, model),
                   family=f"{id(model):x}_{hash(base) & 0xFFFFFFFF:x}")
    if key and key[-1][0] == _VARIANT:
        label += f" ({_VARIANT} {key[-1][1]})"
        if key[-1][1] >= MAX_GUARD_VARIANTS:
            live = replace(live, refused=f"Dynamo's guards refused calls of this "
                                       f"signature {key[-1][1] - 1} times (the last time: "
                                       f"{refusal or 'an unnamed guard'})")
    with evaluation_mode(model), torch.inference_mode(), \
            profiling_memory(options.profile_memory), \
            keeping_library_frames(options.library_frames):
        prepared = prepare(model, BoundInputs(*analysis_copy((args, kwargs))), capture_mode,
                           options.tracer, exact_outputs=live)
    warn_fallback(prepared.captured, capture_mode)
    device = device_of(model, prepared.args)
    on_cuda = device.startswith("cuda")
    if on_cuda and prepared.analysis is None:
        ensure_cuda_runtime()
    executor = _group_executor(model, prepared, call_target,
                               on_cuda and device_events is not False)
    return CallGroup(index, key, label, prepared.captured,
                     prepared.frame, prepared.flops, executor, model.training,
                     device, time.perf_counter_ns() - started,
                     _graph_takes_bound(prepared.captured, call_target or model.forward))


def live_group(model: torch.nn.Module, args: tuple, kwargs: dict, bound: BoundInputs,
               key: tuple, index: int, target: Callable, refusal: str | None = None,
               options: CaptureOptions = CAPTURE, device_events: bool | None = None
               ) -> tuple[Any, CallGroup | None, str, tuple | None]:
    """The caller's call ``target(*args, **kwargs)`` (`bound`: bound to it) made by Dynamo
    (capture/live_capture.py: the program torch.compile would run, so its output, Python
    state, random state and autograd graph are the call's), and the call group of signature
    `key` built from it: (the call's output, the group or None, why there is none, the flat
    inputs of its one graph run, copied as it started: None for several runs). The
    analysis replays the call's graphs on copies of their inputs, in inference mode with
    the random state forked: nothing of the model runs twice. A variant past
    MAX_GUARD_VARIANTS makes no group (its calls run the model itself).

    Example:
        >>> model = torch.nn.Linear(2, 2).eval(); x = torch.ones(1, 2)
        >>> out, g, _, _ = live_group(model, (x,), {}, BoundInputs((x,)), (), 0, model.forward)
        >>> torch.equal(out, model(x)), g.capture.mode, g.pure
        (True, 'dynamo', True)
    """
    started = time.perf_counter_ns()
    label = call_label(args, kwargs)
    base = key[:-1] if key and key[-1][0] == _VARIANT else key
    live = replace(LiveCall.of(target, model), family=f"{id(model):x}_{hash(base) & 0xFFFFFFFF:x}")
    if key and key[-1][0] == _VARIANT:
        label += f" ({_VARIANT} {key[-1][1]})"
        if key[-1][1] >= MAX_GUARD_VARIANTS:
            return target(*args, **kwargs), None, (
                f"Dynamo's guards refused calls of this signature {key[-1][1] - 1} times "
                f"(the last time: {refusal or 'an unnamed guard'})"), None
    found = live_capture(live, bound, type(model).__name__)
    try:
        with forked_rng(model), torch.inference_mode(), \
                profiling_memory(options.profile_memory), \
                keeping_library_frames(options.library_frames):
            prepared = live_prepared(model, found, bound)
    except PyfxprofError as error:
        return found.output, None, first_line(error), None
    device = device_of(model, prepared.args)
    on_cuda = device.startswith("cuda")
    executor = _group_executor(model, prepared, target, on_cuda and device_events is not False)
    group = CallGroup(index, key, label, prepared.captured, prepared.frame, prepared.flops,
                      executor, model.training, device, time.perf_counter_ns() - started,
                      pure=found.pure)
    _note_sizes(group)
    alone = found.runs[0][1] if len(found.runs) == 1 and not group.graphs else None
    return found.output, group, "", alone


def _note_sizes(group: CallGroup) -> None:
    """A one-graph Dynamo group with dynamic dimensions: its nodes table gets the
    ``call_dims`` column (each node's call with its sizes as expressions of the graph's
    size symbols, capture/call_dims.py) and its relay notes each run's symbol values, so a
    window's Profile knows the shapes every call ran at (a decode step's cache length)."""
    gm, frame = group.capture.graph_module, group.capture.frame
    if gm is None or frame is None or group.graphs:
        return
    names, positions = size_symbols(gm)
    noted = frame.note_sizes(positions)
    if noted is None:
        return
    nodes = {node.name: node for node in gm.graph.nodes}
    group.frame = group.frame.assign(call_dims=[
        call_dims(nodes[name]) if name in nodes else "" for name in group.frame["name"]])
    group.sizes, group.noted = tuple(names), noted


def _group_executor(model: torch.nn.Module, prepared: Any, call_target: Callable | None,
                    on_cuda: bool) -> Executor:
    """The executor of a new call group, set up for the live calls: hooks time the call
    target on each call's own arguments; a Dynamo graph is run by the executor from Dynamo's
    code; several Dynamo graphs leave out (never refuse) a call that did not run each of
    its graphs once (the guards of a resumed frame refused it, and it ran eagerly)."""
    executor = executor_for(model, prepared, "codegen", on_cuda)
    captured = prepared.captured
    if isinstance(executor, HooksExecutor):  # (executor.mode == HOOKS)
        executor.kwargs = {}  # every call passes its own: the analysis copies are not kept
        if captured.mode == HOOKS:
            executor.model = call_target or model
        elif call_target is not None:  # whole: time the call itself (the root's hooks ran)
            whole = _Call(call_target)
            leaves: Leaves = [("", whole)]
            executor.model, executor.leaves = whole, leaves
    elif captured.frame is not None and captured.graph_module is not None:
        captured.frame.run_graph_with(executor.run)
    elif isinstance(executor, GraphsExecutor):  # (captured.frame is not None)
        executor.strict = False
    return executor


def _graph_takes_bound(captured: Capture, target: Callable) -> bool:
    """Whether a traced graph's forward has `target`'s parameters (names and kinds, all
    positional): then a call bound to `target` is what the graph takes, with no second
    binding per call."""
    if captured.graph_module is None or captured.graph_inputs is not None:
        return False
    try:
        graph = inspect.signature(captured.graph_module.forward).parameters.values()
        own = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return ([(p.name, p.kind) for p in graph] == [(p.name, p.kind) for p in own]
            and all(p.kind in positional for p in own))


class _Call(torch.nn.Module):
    """A module whose forward is `call`: the whole model's call timed by hooks on it, so the
    model's own root hooks are not run a second time."""

    def __init__(self, call: Callable) -> None:
        super().__init__()
        self.call = call

    def forward(self, *args, **kwargs) -> Any:
        return self.call(*args, **kwargs)


def too_many_groups_warning(model_name: str) -> None:
    """Warned once when calls of a new signature exceed MAX_CALL_GROUPS."""
    warnings.warn(f"pyfxprof: {model_name} was called with more than {MAX_CALL_GROUPS} "
                  "distinct input signatures; calls of further signatures run unprofiled",
                  stacklevel=4)
