"""A Dynamo graph node's call with its dynamic dimensions as expressions of the graph's size
symbols (the nodes table's ``call_dims``), and the call at other symbol values: what a replay
needs to rebuild a decode step's node at each cache length the loop saw (docs/replay.md)."""

from __future__ import annotations

import functools
import json
from typing import Any

import torch
import torch.fx as fx


@functools.cache
def _names() -> dict[str, Any]:
    """The names torch's symbolic expressions print with (FloorDiv, Mod, Max, ...), for
    sympy's parser (imported here: a profile that replays no loop shape never loads sympy)."""
    import sympy
    from torch.utils._sympy import functions as sym_functions
    return {**{k: v for k, v in vars(sym_functions).items() if isinstance(v, type)},
            "Max": sympy.Max, "Min": sympy.Min}


def size_symbols(gm: fx.GraphModule) -> tuple[list[str], list[int]]:
    """(the names of the graph's size inputs (Dynamo's ``s0``-style SymInt placeholders),
    their positions among the graph's inputs): a call's values there fix every dynamic
    dimension of the graph. Empty for a graph of static shapes.

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.ReLU())
        >>> size_symbols(gm)
        ([], [])
    """
    names, positions = [], []
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for position, node in enumerate(placeholders):
        value = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(value, torch.SymInt) and not _constant(value):
            names.append(str(value.node.expr))
            positions.append(position)
    return names, positions


def _constant(value: torch.SymInt) -> bool:
    return bool(getattr(value.node.expr, "is_number", False))


def _dim(value: Any) -> Any:
    """An int as it is; a symbolic one as its expression's text."""
    if isinstance(value, torch.SymInt):
        return int(str(value.node.expr)) if _constant(value) else str(value.node.expr)
    return value


def _symbolic(value: Any) -> Any:
    """`value` (a node argument) with its dynamic sizes as expression texts, mirroring
    call_spec.encode's structure; None where nothing in it is symbolic."""
    if isinstance(value, fx.Node):
        value = value.meta.get("example_value", value.meta.get("val"))
    if isinstance(value, torch.SymInt):
        dim = _dim(value)
        return {"sym": dim} if isinstance(dim, str) else None
    if isinstance(value, torch.Tensor):
        shape, stride = [_dim(d) for d in value.shape], [_dim(d) for d in value.stride()]
        if any(isinstance(d, str) for d in shape + stride):
            return {"tensor": shape, "stride": stride}
        return None
    if isinstance(value, (tuple, list)):
        items = [_symbolic(v) for v in value]
        if all(item is None for item in items):
            return None
        return {"tuple": items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        found = {k: _symbolic(v) for k, v in value.items()}
        return {"dict": found} if any(v is not None for v in found.values()) else None
    return None


def call_dims(node: fx.Node) -> str:
    """The node's call with its dynamic dimensions as expressions (JSON; None where a part is
    static), or "" when none is dynamic.

    Example:
        >>> import torch._dynamo
        >>> graphs = []
        >>> def backend(gm, _inputs):
        ...     graphs.append(gm); return gm
        >>> f = torch.compile(lambda x: x.softmax(-1), backend=backend, dynamic=True)
        >>> _ = f(torch.ones(2, 5))
        >>> node = next(n for n in graphs[0].graph.nodes if n.op == "call_method")
        >>> [type(d).__name__ for d in json.loads(call_dims(node))["args"][0]["tensor"]]
        ['str', 'str']
        >>> torch._dynamo.reset()
    """
    args, kwargs = _symbolic(list(node.args)), _symbolic(dict(node.kwargs))
    if args is None and kwargs is None:
        return ""
    return json.dumps({"args": args or [None] * len(node.args),
                       "kwargs": (kwargs or {"dict": {}})["dict"]})


def _value(text: str, values: dict[str, int]) -> int:
    """An expression's value at the symbols' values (KeyError: a symbol not given)."""
    import sympy
    from sympy.parsing.sympy_parser import parse_expr
    expr = parse_expr(text, local_dict=_names())
    missing = {str(s) for s in expr.free_symbols} - set(values)
    if missing:
        raise KeyError(sorted(missing)[0])
    return int(str(expr.xreplace({sympy.Symbol(str(s)): sympy.Integer(values[str(s)])
                                  for s in expr.free_symbols})))


def _at(concrete: Any, symbolic: Any, values: dict[str, int]) -> Any:
    if symbolic is None:
        return concrete
    if isinstance(symbolic, dict) and "sym" in symbolic:
        return _value(symbolic["sym"], values)
    if isinstance(symbolic, dict) and "tensor" in symbolic:
        found = dict(concrete)
        for key in ("tensor", "stride"):
            found[key] = [d if isinstance(d, int) else _value(d, values) for d in symbolic[key]]
        return found
    if isinstance(symbolic, dict) and "tuple" in symbolic:
        return {"tuple": [_at(c, s, values) for c, s in zip(concrete["tuple"],
                                                              symbolic["tuple"])]}
    if isinstance(symbolic, dict) and "dict" in symbolic:
        inner = concrete["dict"]
        return {"dict": {k: _at(inner[k], symbolic["dict"].get(k), values) for k in inner}}
    if isinstance(symbolic, list):
        return [_at(c, s, values) for c, s in zip(concrete, symbolic)]
    return concrete


def call_at(call_args: str, dims: str, values: dict[str, int]) -> str:
    """The recorded call (``call_args``, call_spec's JSON) at other values of the size
    symbols: its dynamic shapes, strides and size arguments evaluated from ``dims``
    (call_dims' JSON), the rest (dtypes, integer ranges, flags) as recorded. KeyError: an
    expression reads a symbol `values` lacks.

    Example:
        >>> spec = ('{"args": [{"tensor": [1, 4], "dtype": "float32", "stride": [4, 1], '
        ...         '"device": "cpu"}, 4], "kwargs": {}}')
        >>> dims = '{"args": [{"tensor": [1, "s0"], "stride": ["s0", 1]}, {"sym": "s0"}], "kwargs": {}}'
        >>> json.loads(call_at(spec, dims, {"s0": 7}))["args"]
        [{'tensor': [1, 7], 'dtype': 'float32', 'stride': [7, 1], 'device': 'cpu'}, 7]
    """
    if not dims:
        return call_args
    concrete, symbolic = json.loads(call_args), json.loads(dims)
    return json.dumps({"args": _at(concrete["args"], symbolic["args"], values),
                       "kwargs": _at({"dict": concrete["kwargs"]},
                                     {"dict": symbolic["kwargs"]}, values)["dict"]})
