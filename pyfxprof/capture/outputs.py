"""A model's output as a flat list of leaves and back: through pytree containers (tuple, list,
dict, namedtuple, registered types such as Hugging Face's ModelOutput) and dataclass instances,
which pytree leaves whole, so that `profile(backward=True)` reaches their tensors."""

from __future__ import annotations

import copy
import dataclasses
import functools
from typing import Any, Callable

import torch.fx as fx
from torch.fx.node import map_arg
from torch.utils._pytree import tree_flatten, tree_unflatten


def flatten(value: Any) -> tuple[list, Callable[[list], Any]]:
    """The leaves of ``value`` and the function rebuilding it from leaves in the same order
    (a dataclass rebuilt as a shallow copy with its fields replaced, never re-initialised).

    Example:
        >>> @dataclasses.dataclass
        ... class Out:
        ...     loss: float
        ...     parts: tuple
        >>> leaves, rebuild = flatten({"out": Out(1.0, (2, 3))})
        >>> leaves, rebuild([4, 5, 6])
        ([1.0, 2, 3], {'out': Out(loss=4, parts=(5, 6))})
    """
    leaves, spec = tree_flatten(value)
    flat: list = []
    makers: list[tuple[int, Callable[[list], Any]]] = []
    for leaf in leaves:
        if dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            names = [field.name for field in dataclasses.fields(leaf)]
            inner, rebuild_inner = flatten([getattr(leaf, name) for name in names])
            makers.append((len(inner), functools.partial(_with_fields, leaf, names, rebuild_inner)))
            flat += inner
        else:
            makers.append((1, lambda values: values[0]))
            flat.append(leaf)

    def rebuild(values: list) -> Any:
        built, at = [], 0
        for count, make in makers:
            built.append(make(list(values[at:at + count])))
            at += count
        return tree_unflatten(built, spec)
    return flat, rebuild


def _with_fields(template: Any, names: list[str], rebuild: Callable[[list], Any],
                 values: list) -> Any:
    made = copy.copy(template)
    for name, value in zip(names, rebuild(values)):
        object.__setattr__(made, name, value)  # frozen dataclasses too
    return made


def unfold_dataclass_nodes(value: Any) -> Any:
    """``value`` (an FX output node's argument) with each node that constructs a dataclass
    (FX traces ``return Out(loss, logits)`` as such a call) replaced by the dataclass
    instance holding its argument nodes, so that :func:`flatten` reaches them.

    Example:
        >>> import torch
        >>> @dataclasses.dataclass
        ... class Out:
        ...     y: object
        >>> class M(torch.nn.Module):
        ...     def forward(self, x):
        ...         return Out(x + 1)
        >>> gm = fx.symbolic_trace(M())
        >>> output = next(n for n in gm.graph.nodes if n.op == "output")
        >>> unfold_dataclass_nodes(output.args[0])
        Out(y=add)
    """
    def unfold(node: fx.Node) -> Any:
        target = node.target
        if not (node.op == "call_function" and isinstance(target, type)
                and dataclasses.is_dataclass(target)):
            return node
        try:
            return target(*map_arg(node.args, unfold),
                          **map_arg(node.kwargs, unfold))
        except Exception:  # noqa: BLE001 - a __post_init__ computing on its fields
            return node
    return map_arg(value, unfold)
