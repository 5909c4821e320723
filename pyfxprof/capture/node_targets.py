"""FX node targets by op: the dotted name a call_module, get_attr or call_method node targets
(FX keeps those as str; torch's stubs type every node's target as str | Callable)."""

from __future__ import annotations

import torch
import torch.fx as fx


def target_path(node: fx.Node) -> str:
    """The dotted name `node` (call_module, get_attr or call_method) targets.

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.ReLU()))
        >>> target_path(next(n for n in gm.graph.nodes if n.op == "call_module"))
        '0'
    """
    target = node.target
    if not isinstance(target, str):
        raise TypeError(f"FX node {node.name} ({node.op}) targets {target!r}, not a name")
    return target


def target_module(gm: torch.nn.Module, node: fx.Node) -> torch.nn.Module:
    """The submodule of `gm` that the call_module node `node` calls.

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.Sequential(torch.nn.ReLU()))
        >>> target_module(gm, next(n for n in gm.graph.nodes if n.op == "call_module"))
        ReLU()
    """
    return gm.get_submodule(target_path(node))
