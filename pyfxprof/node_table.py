"""Describing timed FX nodes as the Profile's nodes table (identity, module path and stack, edges)."""

from __future__ import annotations

import pandas as pd
import torch.fx as fx
from torch.fx.node import _get_qualified_name


def target_name(node: fx.Node) -> str:
    """Readable target: module path, qualified function name, or method name."""
    if node.op == "call_function":
        try:
            return _get_qualified_name(node.target)
        except (RuntimeError, AttributeError):
            return getattr(node.target, "__name__", str(node.target))
    return str(node.target)


def module_stack(node: fx.Node, root: fx.GraphModule) -> tuple[tuple[str, ...], str, str]:
    """(stack of module paths outermost first, innermost path, innermost type name).

    Types come from the tracer's record of the original modules: the GraphModule keeps only
    empty containers for modules that were traced through.
    """
    stack = node.meta.get("nn_module_stack") or {}
    entries = [value if isinstance(value, tuple) else (str(key), None)
               for key, value in stack.items()]
    if node.op == "call_module" and (not entries or entries[-1][0] != node.target):
        entries.append((str(node.target), type(root.get_submodule(str(node.target)))))
    if not entries:
        return (), "", type(root).__name__
    path, module_class = entries[-1]
    module_type = getattr(module_class, "__name__", None) or "?"
    return tuple(entry[0] for entry in entries), path, module_type


def nodes_frame(nodes: list[fx.Node], root: fx.GraphModule) -> pd.DataFrame:
    """One row per timed node with the Profile's identity columns plus `inputs` (graph edges).

    Example:
        >>> import torch
        >>> gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.ReLU()))
        >>> list(nodes_frame([n for n in gm.graph.nodes if n.op == "call_module"], gm)["name"])
        ['_0']
    """
    rows = []
    for index, node in enumerate(nodes):
        stack, path, module_type = module_stack(node, root)
        rows.append({
            "index": index, "name": node.name, "op": node.op, "target": target_name(node),
            "module_path": path, "module_type": module_type, "module_stack": stack,
            "inputs": tuple(n.name for n in node.all_input_nodes),
        })
    columns = ["index", "name", "op", "target", "module_path", "module_type", "module_stack",
               "inputs"]
    return pd.DataFrame(rows, columns=columns)
