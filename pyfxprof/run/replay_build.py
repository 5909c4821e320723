"""A profiled node's call rebuilt alone: the module (the model's own, with its weights) or
function it targets, and fresh inputs of its recorded shapes, dtypes and strides; a node that
cannot be rebuilt is refused in one line that says why."""

from __future__ import annotations

import copy
import importlib
import json
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from ..capture.call_dims import call_at
from ..capture.call_spec import decode, opaque_types
from ..data.profile import Profile
from ..data.replay_result import REPLAYED_OPS
from ..errors import ArgumentError, PyfxprofError
from .live_models import live_model

#: What the other rows are, for the refusal (any other op: not a graph node's call).
NOT_REPLAYED = {
    "outside_graph": "the Python outside the graph (the user's call around it), not an op",
    "between_graphs": "the time between a graph break's graphs, not an op",
    "outside_kernels": "a compiled model's time outside its kernels, not an op",
    "range": "a user range, not an op",
}
#: The rows of a compiled profile's kernels.
KERNEL_OPS = ("fused_kernel", "extern_kernel", "fallback_op")


def _kernel_refusal(row: Any) -> str:
    """Why a compiled kernel row does not replay, and the eager replay that reproduces it."""
    modules = [str(m) for m in row.get("source_modules", ()) or ()]
    ops = ", ".join(str(o) for o in (row.get("aten_ops", ()) or ())[:4]) or "its ops"
    where = (f"an eager pyfxprof.profile(model, inputs).replay({modules[0]!r}, "
             f"variants=['compile'])" if len(modules) == 1 else
             "an eager pyfxprof.profile(model, inputs) of the modules it came from "
             f"({', '.join(repr(m) for m in modules[:4]) or 'unrecorded'}), "
             "with variants=['compile']")
    return (f"node {row['name']!r} is a compiled kernel ({ops}); a compiled profile records "
            f"no call of its source nodes to rebuild: replay them in {where}")


@dataclass
class Rebuilt:
    """A node's call alone: ``target(*args, **kwargs)`` runs it; ``module`` is the module it
    calls (call_module), else None; ``mutates``: the call writes to its inputs (an in-place
    op: each timed call then gets fresh copies, replay_inplace.py)."""

    name: str
    op: str
    target_name: str
    target: Callable
    spec: dict
    module: torch.nn.Module | None
    in_graph_ns: float
    mutates: bool = False
    nodes: tuple[str, ...] = ()
    calls: int = 0  # the loop's calls at this shape (0: not a loop shape)
    own_in_graph: bool = True  # in_graph_ns is this shape's own (not the node's overall)
    sized: bool = False  # one of the shapes of a loop's size symbols (loop_cases)

    def inputs(self, seed: int = 0) -> tuple[tuple, dict]:
        """Fresh random inputs of the recorded shapes, dtypes and strides."""
        generator = torch.Generator().manual_seed(seed)
        return (tuple(decode(self.spec["args"], generator)),
                decode({"dict": self.spec["kwargs"]}, generator))


def node_row(profile: Profile, node: str) -> Any:
    """The nodes-table row of `node` (a node name or a module path), or a one-line error.

    Example:
        >>> import pandas as pd, numpy as np
        >>> prof = Profile(pd.DataFrame({"index": [0], "name": ["layer1_conv"],
        ...     "op": ["call_module"], "target": ["layer1.conv"], "module_path": ["layer1.conv"],
        ...     "module_type": ["Conv2d"], "module_stack": [()]}), np.array([[5]]), np.array([5]))
        >>> node_row(prof, "layer1.conv")["name"]
        'layer1_conv'
    """
    nodes = profile.nodes
    found = nodes[nodes["name"] == node]
    if found.empty:
        found = nodes[nodes["module_path"] == node]
    if found.empty:
        close = [n for n in nodes["name"] if node.replace(".", "_") in n][:5]
        raise ArgumentError(f"no node {node!r} in this profile"
                            + (f"; did you mean {close}?" if close else
                               "; pass a name from prof.table()'s name column"))
    return found.iloc[0]


def refusal(row: Any) -> str | None:
    """Why `row` (a nodes-table row) cannot be replayed, or None when it can."""
    if row["op"] in KERNEL_OPS:
        return _kernel_refusal(row)
    if row["op"] not in REPLAYED_OPS:
        what = NOT_REPLAYED.get(row["op"], "not a graph node's call")
        return (f"node {row['name']!r} is a {row['op']!r} row, {what} (only "
                f"{', '.join(REPLAYED_OPS)} nodes replay)")
    if bool(row.get("communication", False)):
        return f"node {row['name']!r} is a collective: it needs its process group and peers"
    if not isinstance(row.get("call_args", ""), str) or not row.get("call_args", ""):
        return (f"node {row['name']!r} has no recorded call (a hooks capture, or a profile "
                f"saved before call_args was recorded): profile the model again")
    opaque = opaque_types(json.loads(row["call_args"]))
    if opaque:
        return (f"node {row['name']!r} takes {', '.join(opaque)} objects that a replay "
                f"cannot rebuild")
    return None


def function_of(name: str) -> Callable:
    """The function a call_function node's dotted target names ("torch.ops.aten.mm.default",
    "torch._C._nn.linear", "_operator.add").

    Example:
        >>> function_of("torch.ops.aten.mm.default") is torch.ops.aten.mm.default
        True
    """
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                found = getattr(found, attribute)
        except AttributeError:
            continue
        if callable(found):
            return found
    raise PyfxprofError(f"cannot find the function {name!r} in this process to replay it")


def _method_call(name: str) -> Callable:
    def call(receiver, *args, **kwargs):
        return getattr(receiver, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _module_of(model: Any, row: Any) -> torch.nn.Module:
    """The model's submodule a call_module row calls (by module path, then by target)."""
    if model is None:
        raise PyfxprofError(f"node {row['name']!r} calls a module and the profiled model is "
                            f"gone: pass it as replay(..., model=model) (CLI: --model)")
    for path in (row["module_path"], row["target"]):
        try:
            return model.get_submodule(str(path))
        except (AttributeError, TypeError):
            continue
    raise PyfxprofError(f"the model given has no submodule {row['module_path']!r} (node "
                        f"{row['name']!r}): pass the model that was profiled")


@dataclass
class Case:
    """One recorded call of a node at one shape: its row, its call (call_spec's JSON) and,
    for a loop profile whose node saw several shapes, the runs (rows of samples) made at it
    (None: the node's every run, where the runs were not matched to shapes)."""

    row: Any
    call_args: str
    runs: np.ndarray | None = None
    sized: bool = False  # a shape of the loop's size symbols (meta["loop"]["sizes"])


def spec_text(value: Any) -> str:
    """A recorded call's arguments as profile tables show shapes (capture.shape_run's
    describe): tensors as ``[1, 9] float32``, tuples in parentheses, other values as they are.

    Example:
        >>> spec_text({"tuple": [{"tensor": [1, 9], "dtype": "float32"}, 2]})
        '([1, 9] float32, 2)'
    """
    if isinstance(value, list):
        return "[" + ", ".join(spec_text(v) for v in value) + "]"
    if not isinstance(value, dict):
        return repr(value)
    if "tensor" in value:
        return f"{value['tensor']} {value['dtype']}"
    if "tuple" in value:
        return "(" + ", ".join(spec_text(v) for v in value["tuple"]) + ")"
    if "dict" in value:
        return "{" + ", ".join(f"{k}: {spec_text(v)}" for k, v in value["dict"].items()) + "}"
    return str(next(iter(value.values())))


def loop_cases(profile: Profile, row: Any) -> list[Case]:
    """The node's call at each recorded value of the loop's size symbols (a decode step's
    cache lengths: docs/replay.md), one Case each, or its one recorded call.

    Example:
        >>> import pandas as pd
        >>> row = pd.Series({"call_args": '{"args": [{"tensor": [1, 4], "dtype": "float32", '
        ...     '"stride": [4, 1], "device": "cpu"}], "kwargs": {}}',
        ...     "call_dims": '{"args": [{"tensor": [1, "s0"], "stride": ["s0", 1]}], "kwargs": {}}'})
        >>> nodes = pd.DataFrame({"index": [0], "name": ["a"], "op": ["call_method"],
        ...     "target": ["relu"], "module_path": [""], "module_type": [""], "module_stack": [()]})
        >>> prof = Profile(nodes, np.zeros((3, 1), np.int64), np.zeros(3, np.int64),
        ...     {"loop": {"sizes": {"symbols": ["s0"], "seen": [[4], [6]], "runs": [0, 1, 1]}}})
        >>> [(json.loads(c.call_args)["args"][0]["tensor"], c.runs.tolist())
        ...  for c in loop_cases(prof, row)]
        [([1, 4], [0]), ([1, 6], [1, 2])]
    """
    call_args, dims = row.get("call_args", ""), row.get("call_dims", "")
    sizes = (profile.meta.get("loop") or {}).get("sizes")
    if not (isinstance(dims, str) and dims and sizes and sizes.get("seen")
            and isinstance(call_args, str) and call_args):
        return [Case(row, call_args)]
    runs = None if sizes.get("runs") is None else np.asarray(sizes["runs"], np.int64)
    if runs is not None and len(runs) != profile.samples.shape[0]:
        runs = None  # (not one index per row of samples: not matched)
    cases = []
    for k, values in enumerate(sizes["seen"]):
        try:
            spec = call_at(call_args, dims, dict(zip(sizes["symbols"], values)))
        except Exception:  # (sympy's parse errors vary) an expression it cannot evaluate:
            return [Case(row, call_args)]  # the recorded call alone
        cases.append(Case(row, spec, None if runs is None else np.flatnonzero(runs == k),
                          sized=True))
    return cases


def _in_graph(profile: Profile, cases: list[Case]) -> tuple[float, int, bool]:
    """(the in-graph median of `cases`' calls: per node the median of its runs at this
    shape, then the mean over the nodes; the calls counted (0: not a loop shape); whether
    the median is this shape's own, not the node's over all its shapes)."""
    medians = profile.stats()["median"]
    by_row: dict[int, list[Case]] = {}
    for case in cases:
        by_row.setdefault(int(case.row["index"]), []).append(case)
    values, calls, own = [], 0, True
    for index, mine in by_row.items():
        runs = [c.runs for c in mine if c.runs is not None]
        taken = np.concatenate(runs) if runs else np.zeros(0, np.int64)
        if mine[0].sized and len(runs) == len(mine) and taken.size:
            values.append(float(np.median(profile.samples[taken, index])))
            calls += len(taken)
        else:
            values.append(float(medians.iloc[index]))
            own = own and not mine[0].sized
    return sum(values) / len(values), calls, own


def rebuilt_call(row: Any, model: Any, in_graph_ns: float, nodes: tuple[str, ...] = (),
                 call_args: str | None = None) -> Rebuilt:
    """The call of nodes-table `row` alone on `model` (its module, function or method and
    recorded inputs, or `call_args`, call_spec's JSON of the call at another shape),
    `in_graph_ns` its median in the graph; a one-line error when it cannot be rebuilt
    (refusal)."""
    refused = refusal(row)
    if refused:
        raise PyfxprofError(f"cannot replay: {refused}")
    module = _module_of(model, row) if row["op"] == "call_module" else None
    if module is not None:
        target: Callable = module
    elif row["op"] == "call_method":
        target = _method_call(str(row["target"]))
    else:
        target = function_of(str(row["target"]))
    return Rebuilt(str(row["name"]), str(row["op"]), str(row["target"]), target,
                   json.loads(call_args or row["call_args"]), module, in_graph_ns,
                   nodes=nodes or (str(row["name"]),))


def _rebuilt(profile: Profile, cases: list[Case], model: Any) -> Rebuilt:
    """The call of `cases` (calls of the same shapes, by one node or several), on the model
    given; its in-graph time (_in_graph)."""
    row = cases[0].row
    if refusal(row):
        return rebuilt_call(row, model, math.nan)  # raises, saying why
    in_graph, calls, own = _in_graph(profile, cases)
    names = tuple(dict.fromkeys(str(c.row["name"]) for c in cases))
    built = rebuilt_call(row, model, in_graph, names, cases[0].call_args)
    built.calls, built.own_in_graph, built.sized = calls, own, cases[0].sized
    return built


def rebuild(profile: Profile, node: str, model: Any = None) -> Rebuilt:
    """`node`'s call alone, on the model given or, by default, the profiled model if alive.

    Example:
        >>> import pyfxprof
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 2))
        >>> prof = pyfxprof.profile(net, (torch.randn(3, 4),), runs=3, warmup=1)
        >>> built = rebuild(prof, "0")
        >>> args, kwargs = built.inputs()
        >>> built.target(*args, **kwargs).shape
        torch.Size([3, 2])
    """
    model = live_model(profile) if model is None else model
    row = node_row(profile, node)
    return _rebuilt(profile, [Case(row, row.get("call_args", ""))], model)


def shape_key(call_args: Any) -> str:
    """What tells two recorded calls' shapes apart: the call with integer value ranges left
    out (calls of one shape with other index values are one replay).

    Example:
        >>> a = '{"args": [{"tensor": [2], "dtype": "int64", "stride": [1], "range": [0, 3]}]}'
        >>> shape_key(a) == shape_key(a.replace("[0, 3]", "[1, 9]"))
        True
    """
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "range"}
        return [strip(v) for v in value] if isinstance(value, list) else value
    if not isinstance(call_args, str) or not call_args:
        return ""
    return json.dumps(strip(json.loads(call_args)), sort_keys=True)


def rebuild_shapes(profile: Profile, node: str, model: Any = None) -> list[Rebuilt]:
    """One rebuilt call per recorded shape of `node`, in order: a module path gives one per
    distinct shape among the nodes calling that module (a module called in a loop on
    growing inputs), in graph order; a node of a Profiler loop's profile whose shapes
    depend on the loop's size symbols (a decode step over a growing cache) one per distinct
    shape its calls ran at (loop_cases), ascending; any other node its own call.

    Example:
        >>> import pyfxprof
        >>> class Twice(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = torch.nn.Linear(4, 4)
        ...     def forward(self, x):
        ...         return self.fc(x).sum() + self.fc(torch.cat([x, x])).sum()
        >>> prof = pyfxprof.profile(Twice(), (torch.randn(2, 4),), runs=3, warmup=1)
        >>> [(b.nodes, b.spec["args"][0]["tensor"]) for b in rebuild_shapes(prof, "fc")]
        [(('fc',), [2, 4]), (('fc_1',), [4, 4])]
    """
    first, nodes = node_row(profile, node), profile.nodes
    same = nodes[(nodes["module_path"] == node) & (nodes["op"] == first["op"])
                 & (nodes["target"] == first["target"])]
    rows = [r for _, r in same.iterrows()] or [first]
    groups: dict[str, list[Case]] = {}
    for row in rows:
        for case in loop_cases(profile, row):
            groups.setdefault(shape_key(case.call_args), []).append(case)
    model = live_model(profile) if model is None else model
    return [_rebuilt(profile, group, model) for group in groups.values()]


def on_a_copy(shapes: list[Rebuilt]) -> list[Rebuilt]:
    """The rebuilt calls on one copy of their module (its weights' values, the user's module
    untouched by a forward that changes its own state); the module itself where it cannot be
    copied (evaluation_mode then restores its buffers).

    Example:
        >>> net = torch.nn.Linear(2, 2)
        >>> built = Rebuilt("fc", "call_module", "fc", net, {"args": [], "kwargs": {}}, net, 1.0)
        >>> on_a_copy([built])[0].module is not net
        True
    """
    module = shapes[0].module
    if module is None:
        return shapes
    try:
        copied = copy.deepcopy(module)
    except Exception:  # an uncopyable attribute: replay the module itself
        return shapes
    for built in shapes:
        built.module = built.target = copied
    return shapes
