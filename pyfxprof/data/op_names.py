"""Op names as Kineto and the torch.profiler tables spell them, from a nodes table alone (the
Chrome trace's slices, key_averages' rows, flame graph frames and NVTX ranges say the same)."""

from __future__ import annotations

import re

import pandas as pd

TENSOR_SHAPE = re.compile(r"^\[([0-9, ]*)\] (\w+)$")
_OPEN, _CLOSE = "([{", ")]}"

#: Python's operators (as nodes name their targets) -> the aten op a call with a tensor first
#: argument dispatches to, as torch.profiler names it: ``x + y`` aten::add, ``x += y`` aten::add_.
#: (``x @= y`` has no in-place aten op: Python computes ``x @ y``.)
ATEN_OF_OPERATOR = {f"_operator.{name}": f"aten::{aten}" for name, aten in (
    ("add", "add"), ("iadd", "add_"), ("sub", "sub"), ("isub", "sub_"), ("mul", "mul"),
    ("imul", "mul_"), ("truediv", "div"), ("itruediv", "div_"), ("floordiv", "floor_divide"),
    ("ifloordiv", "floor_divide_"), ("mod", "remainder"), ("imod", "remainder_"),
    ("pow", "pow"), ("ipow", "pow_"), ("matmul", "matmul"), ("imatmul", "matmul"),
    ("and_", "__and__"), ("iand", "__iand__"), ("or_", "__or__"), ("ior", "__ior__"),
    ("xor", "__xor__"), ("ixor", "__ixor__"), ("lshift", "__lshift__"),
    ("ilshift", "__ilshift__"), ("rshift", "__rshift__"), ("irshift", "__irshift__"),
    ("neg", "neg"))}


def op_name(op: str, target: str, module_type: str) -> str:
    """The op a node runs, named as profilers name ops: ``aten::addmm`` for an aten overload,
    the module class for a module call, ``Tensor.view`` for a method, the qualified function
    (``torch.addmm``, ``operator.add``) for a function, ``range:NAME`` for a user range (its
    node name), the target for anything else (kernels, ops read from a torch.profiler trace).

    >>> op_name("call_function", "torch.ops.aten.addmm.default", "Linear")
    'aten::addmm'
    >>> op_name("call_module", "layer1.0.conv1", "Conv2d"), op_name("call_method", "view", "")
    ('Conv2d', 'Tensor.view')
    >>> op_name("call_function", "_operator.add", "Net")
    'operator.add'
    """
    if op == "call_module":
        return module_type or target
    if op == "call_method":
        return f"Tensor.{target}"
    if op == "call_function" and target.startswith("torch.ops."):
        namespace, _, rest = target[len("torch.ops."):].partition(".")
        return f"{namespace}::{rest.partition('.')[0]}" if rest else target
    if op == "call_function" and target.startswith("_operator."):
        return target[1:]
    return f"range:{target}" if op == "range" else target


def aten_of_operator(target: str, input_shapes: str) -> str | None:
    """The aten op of a Python operator node whose first argument is a tensor (ATEN_OF_OPERATOR),
    else None (another target, or an operator on ints, lists or a scalar first: ``2 - x``
    runs aten::rsub).

    >>> aten_of_operator("_operator.iadd", "([4, 8] float32, [4, 8] float32)")
    'aten::add_'
    >>> aten_of_operator("_operator.add", "(int, int)"), aten_of_operator("torch.relu", "")
    (None, None)
    """
    aten = ATEN_OF_OPERATOR.get(target)
    if aten is None:
        return None
    text = input_shapes.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    arguments = top_level_items(text)
    return aten if arguments and TENSOR_SHAPE.match(arguments[0]) else None


def op_names(nodes: pd.DataFrame) -> list[str]:
    """`op_name` of every node of a nodes table (computed once per distinct op), a Python
    operator on a tensor named by its aten op as key_averages names it (``out += x``:
    aten::add_), so a trace's slices and its key_averages rows say the same.

    >>> op_names(pd.DataFrame({"op": ["call_method", "call_function", "call_function"],
    ...                        "target": ["view", "_operator.iadd", "_operator.add"],
    ...                        "module_type": ["", "", ""],
    ...                        "input_shapes": ["", "([2] float32, [2] float32)", "(int, int)"]}))
    ['Tensor.view', 'aten::add_', 'operator.add']
    """
    shapes = nodes["input_shapes"].astype(str) if "input_shapes" in nodes else [""] * len(nodes)
    keys = list(zip(nodes["op"].astype(str), nodes["target"].astype(str),
                    nodes["module_type"].astype(str), shapes))
    names = {key: (key[0] == "call_function" and aten_of_operator(key[1], key[3]))
             or op_name(*key[:3]) for key in set(keys)}
    return [names[key] for key in keys]


def top_level_items(text: str) -> list[str]:
    """The comma-separated items of ``text`` outside any bracket."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += (char in _OPEN) - (char in _CLOSE)
        if char == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    items.append("".join(current).strip())
    return [item for item in items if item]


def range_names(nodes: pd.DataFrame) -> list[str]:
    """The name of each node's NVTX range (and trace slice): its op name, then its module path
    when it has one, as Nsight users read both on one line.

    >>> range_names(pd.DataFrame({"op": ["call_function", "call_method"],
    ...     "target": ["torch.ops.aten.addmm.default", "view"], "module_type": ["Linear", ""],
    ...     "module_path": ["transformer.h.0.attn.c_attn", ""]}))
    ['aten::addmm · transformer.h.0.attn.c_attn', 'Tensor.view']
    """
    paths = nodes["module_path"].astype(str) if "module_path" in nodes else [""] * len(nodes)
    return [f"{name} · {path}" if path else name for name, path in zip(op_names(nodes), paths)]
