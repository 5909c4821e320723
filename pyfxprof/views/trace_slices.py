"""Pieces of the Chrome trace and flame graph that come from the nodes table alone: module call
levels as blocks of contiguous nodes and Kineto-style input dimension lists parsed from shape
text (op names: data/op_names.py)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..data.op_names import TENSOR_SHAPE, top_level_items


def input_dims(shapes: str) -> tuple[list[list[int]], list[str]]:
    """Kineto's ("Input Dims", "Input type") lists from pyfxprof's input shape text: one entry
    per argument, [] and the text itself for non-tensors.

    >>> input_dims("([5, 3, 224, 224] float32, [64, 3, 7, 7] float32, int)")
    ([[5, 3, 224, 224], [64, 3, 7, 7], []], ['float32', 'float32', 'int'])
    >>> input_dims("[2] int64")
    ([[2]], ['int64'])
    """
    text = shapes.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    dims, types = [], []
    for item in top_level_items(text):
        match = TENSOR_SHAPE.match(item)
        if match:
            numbers = match.group(1).replace(",", " ").split()
            dims.append([int(n) for n in numbers])
            types.append(match.group(2))
        else:
            dims.append([])
            types.append(item)
    return dims, types


def module_blocks(nodes: pd.DataFrame) -> list[dict]:
    """Module call levels: per depth, each run of contiguous nodes under one module path, as
    {"path", "type", "level", "first", "last"} (node positions). A call_module node is its own
    call (never merged with a neighbouring call of the same module) and a block that is only
    that node is left out: the node's slice already shows it.

    >>> nodes = pd.DataFrame({"op": ["call_module", "call_function", "call_module"],
    ...     "module_path": ["blk.conv", "blk", "head"], "module_type": ["Conv2d", "Block", "L"],
    ...     "module_stack": [("blk", "blk.conv"), ("blk",), ("head",)]})
    >>> [(b["path"], b["level"], b["first"], b["last"]) for b in module_blocks(nodes)]
    [('blk', 0, 0, 1)]
    """
    stacks: list[tuple[str, ...]] = [tuple(s) if isinstance(s, (tuple, list)) else () for s in nodes["module_stack"]]
    types = dict(zip(nodes["module_path"], nodes["module_type"]))
    calls = [path if op == "call_module" else None  # the module each node itself calls
             for op, path in zip(nodes["op"], nodes["module_path"])]
    blocks: list[dict[str, Any]] = []
    for level in range(max(map(len, stacks), default=0)):
        current: dict[str, Any] | None = None
        for i, stack in enumerate(stacks):
            key = stack[:level + 1] if len(stack) > level else None
            own = key is not None and calls[i] == key[-1]
            if key is not None and current is not None and current["key"] == key \
                    and not own and not current["own"]:
                current["last"] = i
                continue
            current = None if key is None else {"key": key, "own": own, "first": i, "last": i}
            if current is not None:
                blocks.append(current)
    return [{"path": b["key"][-1], "type": str(types.get(b["key"][-1], "")),
             "level": len(b["key"]) - 1, "first": b["first"], "last": b["last"]}
            for b in blocks if not (b["own"] and b["first"] == b["last"])]
