"""Describing timed nodes as the Profile's nodes table (identity, module path and stack, edges):
FX graph nodes, or module calls timed by hooks."""

from __future__ import annotations

import pandas as pd
import torch.fx as fx
from torch.fx.node import _get_qualified_name

from .source import node_source

#: Columns of the frames built here, in order.
COLUMNS = ["index", "name", "op", "target", "module_path", "module_type", "module_stack", "inputs",
           "communication", "source", "source_stack"]
#: Targets that are collective communication: c10d operator namespaces (functional
#: collectives) and torch.distributed's collective functions (as traced by fx: see
#: capture.collectives.BoundCollective).
COMM_PREFIXES = ("torch.ops._c10d_functional.", "torch.ops.c10d_functional.", "torch.ops.c10d.",
                 "torch.distributed._functional_collectives.")
COMM_FUNCTIONS = frozenset(
    f"torch.distributed.{name}" for name in (
        "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
        "reduce_scatter_tensor", "broadcast", "reduce", "gather", "scatter", "all_to_all",
        "all_to_all_single", "barrier", "send", "recv", "isend", "irecv", "all_reduce_coalesced",
        "all_gather_coalesced", "all_gather_single", "gather_single"))


#: The row of a profile of several graphs (Dynamo's at graph breaks, or torch.compile'd ones)
#: holding each run's time from one graph's end to the next one's start: the model's Python
#: that broke the graph and Dynamo's code around it (resume calls and their guards).
BETWEEN_GRAPHS = "(between graphs)"


def between_graphs_row(index: int, root_type: str) -> dict:
    """The nodes-table row BETWEEN_GRAPHS (op "between_graphs") at position `index`.

    Example:
        >>> between_graphs_row(7, "Net")["name"]
        '(between graphs)'
    """
    return {"index": index, "name": BETWEEN_GRAPHS, "op": "between_graphs",
            "target": "Python between graphs (graph breaks, Dynamo's resume calls)",
            "module_path": "", "module_type": root_type, "module_stack": (), "inputs": (),
            "communication": False, "source": "", "source_stack": ()}


def target_name(node: fx.Node) -> str:
    """Readable target: module path, qualified function name (a bound collective's public
    name), or method name."""
    if node.op == "call_function":
        public_name = getattr(node.target, "public_name", None)
        if isinstance(public_name, str):
            return public_name
        target = node.target
        if not isinstance(target, str):  # (a call_function's target is the function)
            try:
                return _get_qualified_name(target)
            except (RuntimeError, AttributeError):
                pass
        return getattr(target, "__name__", str(target))
    return str(node.target)


def is_communication(op: str, target: str) -> bool:
    """True for a call of a collective (functional collectives, torch.distributed.all_reduce...).

    Example:
        >>> is_communication("call_function", "torch.ops._c10d_functional.all_reduce")
        True
        >>> is_communication("call_function", "torch.add")
        False
    """
    return op == "call_function" and (target.startswith(COMM_PREFIXES)
                                      or target in COMM_FUNCTIONS)


def module_stack(node: fx.Node, root: fx.GraphModule) -> tuple[tuple[str, ...], str, str]:
    """(stack of module paths outermost first, innermost path, innermost type name).

    Types come from the tracer's record of the original modules: the GraphModule keeps only
    empty containers for modules that were traced through.
    """
    stack = node.meta.get("nn_module_stack") or {}
    entries = [value if isinstance(value, tuple) else (str(key), None)
               for key, value in stack.items()]
    entries = [entry for entry in entries if entry[0]]  # torch.export writes the root too
    if node.op == "call_module" and (not entries or entries[-1][0] != node.target):
        entries.append((str(node.target), type(root.get_submodule(str(node.target)))))
    if node.op == "get_attr" and not entries and "." in str(node.target):
        entries = _owners(node, root)  # a lifted parameter's (torch.export)
    if not entries:
        return (), "", type(root).__name__
    path, module_class = entries[-1]
    if isinstance(module_class, str):  # torch.export writes the qualified name
        module_class = module_class.rsplit(".", 1)[-1]
    module_type = module_class if isinstance(module_class, str) else getattr(
        module_class, "__name__", None) or "?"
    return tuple(entry[0] for entry in entries), path, module_type


def _owners(node: fx.Node, root: fx.GraphModule) -> list[tuple[str, type | str | None]]:
    """(path, type) of the modules holding the attribute a get_attr `node` reads, outermost
    first: an exported program reads its parameters in get_attr nodes without a module stack.
    The types come from a user's stack that passes through the owner (the exported module
    keeps only plain containers), else from the module found there."""
    owner = str(node.target).rsplit(".", 1)[0]
    for user in node.users:
        stack = [value for value in (user.meta.get("nn_module_stack") or {}).values()
                 if isinstance(value, tuple)]
        paths = [entry[0] for entry in stack]
        if owner in paths:
            return [entry for entry in stack[:paths.index(owner) + 1] if entry[0]]
    parts = owner.split(".")
    return [(".".join(parts[:k]), type(root.get_submodule(".".join(parts[:k]))))
            for k in range(1, len(parts) + 1)]


def nodes_frame(nodes: list[fx.Node], root: fx.GraphModule) -> pd.DataFrame:
    """One row per timed node with the Profile's identity columns plus `inputs` (graph edges),
    `communication` (bool: a collective call, see is_communication) and `source` /
    `source_stack` (the model-code lines that created the node, see capture.source).

    Example:
        >>> import torch
        >>> gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.ReLU()))
        >>> list(nodes_frame([n for n in gm.graph.nodes if n.op == "call_module"], gm)["name"])
        ['_0']
    """
    rows = []
    for index, node in enumerate(nodes):
        stack, path, module_type = module_stack(node, root)
        target = target_name(node)
        rows.append({
            "index": index, "name": node.name, "op": node.op, "target": target,
            "module_path": path, "module_type": module_type, "module_stack": stack,
            "inputs": tuple(n.name for n in node.all_input_nodes),
            "communication": _is_communication_node(node, target),
            **dict(zip(("source", "source_stack"), node_source(node))),
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def _is_communication_node(node: fx.Node, target: str) -> bool:
    """A collective call, or the ``wait()`` on the work an asynchronous collective returned."""
    if node.op == "call_method" and target == "wait" and isinstance(node.args[0], fx.Node):
        source = node.args[0]
        return is_communication(source.op, target_name(source))
    return is_communication(node.op, target)


def module_calls_frame(calls: list[tuple[str, str]], root_type: str) -> pd.DataFrame:
    """One row per module call timed by hooks, from (module path, module type name) in call
    order. Names follow FX's: the path with '_' for '.', then '_1', '_2'... on repeated calls;
    the root (path "") is named after its type. Ops are "call_module"; `inputs` are empty.

    Example:
        >>> frame = module_calls_frame([("layer1.0", "Block"), ("relu", "ReLU"),
        ...                             ("relu", "ReLU")], "Net")
        >>> list(frame["name"]), frame["module_stack"][0]
        (['layer1_0', 'relu', 'relu_1'], ('layer1', 'layer1.0'))
    """
    rows: list[dict] = []
    seen: dict[str, int] = {}
    for index, (path, module_type) in enumerate(calls):
        base = path.replace(".", "_") or root_type
        repeat = seen.get(path, 0)
        seen[path] = repeat + 1
        parts = path.split(".") if path else []
        rows.append({
            "index": index, "name": f"{base}_{repeat}" if repeat else base, "op": "call_module",
            "target": path or root_type, "module_path": path, "module_type": module_type,
            "module_stack": tuple(".".join(parts[:k + 1]) for k in range(len(parts))),
            "inputs": (), "communication": False, "source": "", "source_stack": (),
        })
    return pd.DataFrame(rows, columns=COLUMNS)
