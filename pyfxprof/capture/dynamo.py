"""Capturing with TorchDynamo: the model's call as one FX graph of torch functions (or, at
granularity "aten", of aten ops), every node keeping its module path and type.

A `torch.compile` backend records the graph Dynamo builds while running the model once on
copies of the inputs (the caller's tensors and caches are never run on). Every input of the
graph stays a placeholder: the caller's tensors are found again by position in the flattened
inputs (`input_tensors`), parameters and buffers are passed as they are. A model Dynamo
splits into several graphs (graph breaks) gives every graph, in the order they ran, its
nodes named apart from the other graphs' (capture/dynamo_frame.py runs them inside Dynamo's
own code); `dynamo_capture`, which needs one graph, refuses it with the break reasons.
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
import types
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx

from ..errors import PyfxprofError, first_line
from .functions import functions_allowed_in_graph, named_applies
from .inputs import BoundInputs, copied_alike, input_tensors
from .instances import Instance, instance_stack
from .torch_compat import isolated_compile_keywords, isolates_recompiles, known_config

#: Values of profile(granularity=...): torch functions and methods, or aten ops.
GRANULARITIES = ("function", "aten")
_FRESH = itertools.count()
#: How the attributes Dynamo keeps on a tensor begin (its dynamic-dimension marks, under names
#: that change between torch releases: ``_dynamo_weak_dynamic_indices``,
#: ``_has_dynamo_dim_marking``...).
_MARK_PREFIXES = ("_dynamo_", "_has_dynamo_")
_ROOT = re.compile(r"^(?:[LG]\[['\"][^'\"]*['\"]\](?:\.__self__)?|self)\.?")
_ITEM = re.compile(r"\[['\"]?([^\]'\"]+)['\"]?\]")
#: The name Dynamo gives the function resuming `forward` after a graph break at line 8.
_RESUME = re.compile(r"\btorch_dynamo_resume_in_(\w+?)_at_\d+\b")


def module_path(dynamo_path: str) -> str:
    """A module path as FX writes it from Dynamo's source text.

    Example:
        >>> module_path("L['model'].encoder.layer[0]._modules['attn']")
        'encoder.layer.0.attn'
        >>> module_path("L['target'].__self__.lm_head")  # a traced bound forward
        'lm_head'
    """
    path = _ROOT.sub("", dynamo_path)
    path = _ITEM.sub(r".\1", path).replace("._modules.", ".")
    return path.lstrip(".").replace("..", ".")


def _entry(family: str | None = None) -> types.FunctionType:
    """A new function object with its own code object and globals, so Dynamo's cache (kept
    per code object) starts empty and is not shared with the user's own compiled calls, and
    what Dynamo installs for the call (its compiled graph, imports) stays in our globals.

    Entries of one `family` share their code's name, which is what Dynamo keys its
    automatic-dynamic state on (torch/_dynamo/pgo.py, CodeId): a Python int or a dimension
    that differed between two captures of the family is captured dynamic from then on, as
    torch.compile recompiles a function once, not at every new value."""
    def call(target, args, kwargs):
        return target(*args, **kwargs)
    name = f"pyfxprof_capture_{family if family else next(_FRESH)}"
    code = call.__code__.replace(co_name=name)
    return types.FunctionType(code, {"__builtins__": __builtins__}, code.co_name)


@dataclass
class DynamoRun:
    """What one Dynamo compilation of a call left: its graphs with their example inputs, the
    copy of the inputs it ran on, the entry function compiled, its cache entries (the code
    Dynamo generated and the guards saying which calls that code is valid for) and the
    reasons of its graph breaks."""

    graphs: list
    copied: BoundInputs
    entry: types.FunctionType
    cache_entries: list
    breaks: list[str]
    region: int = -1  # Dynamo's isolate_recompiles region of the compilation (-1: none)
    output: Any = None  # what the call returned (a live run: the caller's own call)


def _logging_methods() -> set:
    """Logger methods Dynamo skips instead of breaking the graph on (a model's warning
    during the capture is not printed; the timed runs execute the graph, which has no
    logging in it): the standard levels below error, and transformers' ``warning_once``."""
    names = ("debug", "info", "warning", "warning_once", "info_once")
    return {getattr(logging.Logger, n) for n in names if hasattr(logging.Logger, n)}


def _capture_config(live: bool) -> Any:
    """Dynamo's config for one capture (the settings this torch has): logging calls skipped;
    for the caller's own call (`live`), a frame Dynamo cannot compile run as it is and ints
    of the model's modules left unspecialized, as torch.compile's defaults would not."""
    return torch._dynamo.config.patch(known_config(
        "torch._dynamo.config", {"ignore_logging_functions": _logging_methods(),
                                 "suppress_errors": live,
                                 "allow_unspec_int_on_nn_module": live}))


def run_dynamo(target: Any, bound: BoundInputs, backend: Any = None,
               dynamic: Any = None, family: str | None = None,
               isolated: bool = False, live: bool = False) -> DynamoRun:
    """Run ``target(*args, **kwargs)`` once under Dynamo on a deep copy of `bound`: every
    graph it made, in the order they ran. `backend(gm, example_inputs)` returns what runs
    the graph (default: the graph itself); `dynamic(copied)` may mark dimensions of the
    copied tensors dynamic (then shapes not marked stay static where Dynamo can); `family`:
    see _entry. `isolated`: the compilation's cache entries (the model's own frames'
    too, at graph breaks) are kept in a region of their own (torch.compile's
    isolate_recompiles), so captures in a process never add up to Dynamo's recompile
    limit for the model's functions. A torch.autograd.Function's ``apply`` is one node
    (capture/functions.py). `live`: the call is the caller's own, made on `bound` itself
    (as torch.compile makes it: Dynamo's code replays its side effects, a frame Dynamo
    cannot compile runs as it is), its output kept; the marks `dynamic` leaves on its
    tensors are taken off again after the call, and an int of the model that changed
    between two captures of a `family` is captured dynamic (as ints elsewhere are)."""
    import torch._dynamo  # noqa: F401  (imported lazily: it is slow to import)
    from torch._dynamo.utils import counters

    graphs: list = []

    def recording(gm: fx.GraphModule, example_inputs: list) -> Any:
        gm = named_applies(gm)
        graphs.append((gm, list(example_inputs)))
        return gm.forward if backend is None else backend(gm, example_inputs)

    copied = bound if live else BoundInputs(*copied_alike((bound.args, bound.kwargs)))
    marks = _marked(copied, dynamic, live)
    breaks_before = dict(counters["graph_break"])
    isolated = isolated and isolates_recompiles()
    from torch._C._dynamo import eval_frame
    entry = _entry(family)
    try:
        with _capture_config(live), functions_allowed_in_graph():
            compiled = torch.compile(
                entry, backend=recording, dynamic=None if dynamic else False,
                **isolated_compile_keywords(isolated))
            output = compiled(target, copied.args, copied.kwargs)
        region = getattr(compiled, "_isolate_recompiles_id", -1)
        cache_entries = list(eval_frame._get_cache_entries_for_region(entry.__code__, region)
                             if isolated else
                             eval_frame._debug_get_cache_entry_list(entry.__code__))
    finally:
        for tensor, before in marks:  # (the caller's own tensors, as they were)
            _restore_marks(tensor, before)
        reset_code = getattr(eval_frame, "_reset_code", None)  # (not in every torch)
        if reset_code is not None:
            reset_code(entry.__code__)
    reasons = [r for r, n in counters["graph_break"].items() if n > breaks_before.get(r, 0)]
    return DynamoRun(graphs, copied, entry, cache_entries, reasons, region, output)


def _marked(bound: BoundInputs, dynamic: Any, live: bool) -> list:
    """Call `dynamic(bound)` (if any); for a `live` call (the caller's own inputs), each
    tensor with the Dynamo marks it had before (_dynamo_marks), to be put back after it."""
    marks = [(t, _dynamo_marks(t)) for t in input_tensors(bound)] if live else []
    if dynamic is not None:
        dynamic(bound)
    return marks


def _dynamo_marks(tensor: torch.Tensor) -> dict:
    """The attributes Dynamo keeps on `tensor` (_MARK_PREFIXES), containers copied.

    Example:
        >>> t = torch.ones(2, 3)
        >>> torch._dynamo.maybe_mark_dynamic(t, 0)
        >>> sorted(_dynamo_marks(t))[:1]
        ['_dynamo_weak_dynamic_indices']
    """
    return {name: value.copy() if hasattr(value, "copy") else value
            for name, value in vars(tensor).items() if name.startswith(_MARK_PREFIXES)}


def _restore_marks(tensor: torch.Tensor, before: dict) -> None:
    """Put `tensor`'s Dynamo marks back as they were (`before`, _dynamo_marks'): those the
    capture added removed, those it changed restored; its other attributes untouched.

    Example:
        >>> t = torch.ones(2)
        >>> torch._dynamo.maybe_mark_dynamic(t, 0)
        >>> _restore_marks(t, {}); _dynamo_marks(t)
        {}
    """
    for name in [n for n in vars(tensor) if n.startswith(_MARK_PREFIXES) and n not in before]:
        delattr(tensor, name)
    for name, value in before.items():
        setattr(tensor, name, value)


def break_reasons(reasons: list[str]) -> list[str]:
    """Each graph-break reason Dynamo gave, as its first line.

    Example:
        >>> break_reasons([f"Unsupported context manager{chr(10)}  Explanation: ..."])
        ['Unsupported context manager']
    """
    return [first_line(reason) for reason in reasons]


def split_refusal(found: DynamoRun, name: str) -> PyfxprofError:
    """The one-line refusal of a call Dynamo split (for a caller that needs one graph)."""
    reasons = break_reasons(found.breaks)[:2]
    why = f" (graph breaks: {'; '.join(reasons)})" if reasons else ""
    return PyfxprofError(f"TorchDynamo split {name} into {len(found.graphs)} graphs{why}")


def graphs_of(found: DynamoRun, name: str, granularity: str) -> list[fx.GraphModule]:
    """Every graph of `found` (retraced to aten ops at granularity "aten") with FX-style
    module stacks, node names unique across the graphs (the Profile's row names)."""
    taken: set[str] = set()
    graphs = []
    for gm, example_inputs in found.graphs:
        if granularity == "aten":
            gm = _aten_graph(gm, example_inputs)
        graphs.append(with_module_stacks(gm, name, taken))
    return graphs


def _aten_graph(gm: fx.GraphModule, example_inputs: list) -> fx.GraphModule:
    """`gm` retraced to aten ops; each aten node keeps the meta of the node it came from."""
    import torch.fx.traceback as fx_traceback
    from torch.fx.experimental.proxy_tensor import make_fx

    with fx_traceback.preserve_node_meta():
        return make_fx(lambda *a: fx.Interpreter(gm).run(*a))(*example_inputs)


#: Where a node of a graph made here keeps Dynamo's own nn_module_stack (paths relative to the
#: frame Dynamo compiled), from which its stack at a module instance is written.
DYNAMO_STACK = "dynamo_nn_module_stack"


def _module_stack(node: fx.Node, instance: Instance | None) -> dict:
    """The node's nn_module_stack with FX-style paths, the root itself left out: at
    `instance`, the model's paths of the modules the frame's graph ran in; else the paths
    from the frame's own module (capture/instances.py)."""
    raw = node.meta.get(DYNAMO_STACK, node.meta.get("nn_module_stack")) or {}
    if instance is not None:
        return instance_stack(raw, instance, module_path)
    stack = {}
    for value in raw.values():
        path = module_path(value[0]) if isinstance(value, tuple) else ""
        if path:
            stack[path] = (path, value[1])
    return stack


def one_graph(found: DynamoRun, model: torch.nn.Module,
              granularity: str) -> tuple[fx.GraphModule, list]:
    """(the one graph of `found` with FX-style module stacks, and per placeholder: the
    position in `input_tensors(...)` of the caller's tensor it takes, or the constant it
    always takes — a parameter or buffer, passed as an argument so that no attribute lookup
    is timed). A call Dynamo split is refused (split_refusal)."""
    if len(found.graphs) != 1:
        raise split_refusal(found, type(model).__name__)
    [(gm, example_inputs)] = found.graphs
    position = {id(t): k for k, t in enumerate(input_tensors(found.copied))}
    inputs = [position.get(id(value), value) for value in example_inputs]
    if granularity == "aten":
        gm = _aten_graph(gm, example_inputs)
    return with_module_stacks(gm, type(model).__name__), inputs


def with_module_stacks(gm: fx.GraphModule, name: str, taken: set[str] | None = None,
                       instance: Instance | None = None) -> fx.GraphModule:
    """A copy of Dynamo's graph `gm` (same placeholders, same outputs) whose nodes carry
    FX-style module stacks (module paths as FX writes them, the root left out; with
    `instance`, the paths of the module instance the graph ran for, capture/instances.py)
    and stack traces naming the model's functions (not the functions Dynamo resumes them in
    after a graph break). With `taken`, node names are kept apart from the names in it, and
    added to it. `gm` may be a graph made here (its nodes keep Dynamo's stacks)."""
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for used in sorted(taken or ()):
        graph._graph_namespace.create_name(used, None)
    for node in gm.graph.nodes:
        env[node] = graph.node_copy(node, lambda n: env[n])
        if node.op != "placeholder":
            env[node].meta[DYNAMO_STACK] = node.meta.get(
                DYNAMO_STACK, node.meta.get("nn_module_stack"))
            env[node].meta["nn_module_stack"] = _module_stack(node, instance)
        if node.meta.get("stack_trace"):  # the model's own function, not Dynamo's resume
            env[node].meta["stack_trace"] = _RESUME.sub(r"\1", node.meta["stack_trace"])
    attrs = {node.target: functools.reduce(getattr, node.target.split("."), gm)
             for node in gm.graph.nodes if node.op in ("get_attr", "call_module")}
    rebuilt = fx.GraphModule(attrs, graph, name)
    rebuilt.graph.lint()
    if taken is not None:
        taken.update(node.name for node in rebuilt.graph.nodes)
    return rebuilt


def check_granularity(granularity: str) -> None:
    """A one-line PyfxprofError unless `granularity` is one of GRANULARITIES.

    Example:
        >>> check_granularity("aten")
    """
    if granularity not in GRANULARITIES:
        raise PyfxprofError(f"granularity must be one of {', '.join(GRANULARITIES)}, "
                            f"got {granularity!r}")


def dynamo_capture(model: torch.nn.Module, bound: BoundInputs,
                   granularity: str = "function") -> tuple[fx.GraphModule, list]:
    """(graph of `model` called on `bound`, what each placeholder takes: a position in
    `input_tensors(...)` of a call's inputs, or a constant tensor). Raises PyfxprofError when
    Dynamo fails or breaks the graph.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
        >>> gm, graph_inputs = dynamo_capture(model, BoundInputs((torch.zeros(1, 2),)))
        >>> [k if isinstance(k, int) else tuple(k.shape) for k in graph_inputs]
        [(2, 2), (2,), 0]
        >>> [n.meta["nn_module_stack"] for n in gm.graph.nodes if n.op == "call_function"][0]
        {'0': ('0', <class 'torch.nn.modules.linear.Linear'>)}
    """
    check_granularity(granularity)
    try:
        return one_graph(run_dynamo(model, bound), model, granularity)
    except PyfxprofError:
        raise
    except Exception as error:  # Dynamo's own failures become one line
        raise PyfxprofError(f"TorchDynamo cannot capture {type(model).__name__}: "
                            f"{type(error).__name__}: {first_line(error)[:200]}") from None
