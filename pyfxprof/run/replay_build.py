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

import torch

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


def rebuilt_call(row: Any, model: Any, in_graph_ns: float,
                 nodes: tuple[str, ...] = ()) -> Rebuilt:
    """The call of nodes-table `row` alone on `model` (its module, function or method and
    recorded inputs), `in_graph_ns` its median in the graph; a one-line error when it cannot
    be rebuilt (refusal)."""
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
                   json.loads(row["call_args"]), module, in_graph_ns,
                   nodes=nodes or (str(row["name"]),))


def _rebuilt(profile: Profile, rows: list, model: Any) -> Rebuilt:
    """The call of `rows` (nodes that made one call of the same shapes), on the model given;
    its in-graph time: the mean of their medians (one call's)."""
    if refusal(rows[0]):
        return rebuilt_call(rows[0], model, math.nan)  # raises, saying why
    medians = profile.stats()["median"]
    in_graph = sum(float(medians.iloc[int(r["index"])]) for r in rows) / len(rows)
    return rebuilt_call(rows[0], model, in_graph, tuple(str(r["name"]) for r in rows))


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
    return _rebuilt(profile, [node_row(profile, node)], model)


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
    """One rebuilt call per recorded shape of `node`: a module path gives one per distinct shape
    among the nodes calling that module (a module called in a loop on growing inputs, e.g. a
    decoder step over a growing cache), in graph order; any other node name its own call.

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
    groups: dict[str, list] = {}
    for row in rows:
        groups.setdefault(shape_key(row.get("call_args", "")), []).append(row)
    model = live_model(profile) if model is None else model
    return [_rebuilt(profile, group, model) for group in groups.values()]
