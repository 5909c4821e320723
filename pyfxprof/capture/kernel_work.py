"""The work of one Inductor kernel for the roofline (docs/roofline.md): its FLOPs, counted on
the post-grad nodes it covers, and the bytes of its own inputs and outputs (a fused kernel does
not move its intermediates), from the shapes Inductor's fake tensors give those nodes."""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.fx as fx
from torch._guards import detect_fake_mode
from torch.fx.node import map_arg

from .flops import FlopMeter
from .model_state import dtype_name
from .node_bytes import tensors

#: unknown_ops of a kernel whose work is not known (a node without a fake tensor, or no node
#: its own): no bytes, no roofline bound.
WORK_UNKNOWN = "(kernel work unknown)"
#: The first names of kernel handles that call a library op (an extern kernel or a fallback)
#: rather than generated code.
LIBRARY_CALLS = ("extern_kernels", "aten", "torch")


def owned_nodes(covers: dict[str, list[str]], handle: str) -> set[str]:
    """The post-grad nodes whose work kernel `handle` is charged, of Inductor's mapping
    `covers` (handle -> the nodes it covers): each node once, to the library call covering
    it where one does (the op it runs), else to the covering kernel with the fewest nodes
    (Inductor also maps a kernel to nodes it merely prepares for others: a weight layout).

    Example:
        >>> covers = {"cpp_fused_0:1": ["conv", "relu", "bn"], "extern_kernels.conv:2": ["conv"],
        ...           "cpp_fused_1:3": ["relu", "bn"]}
        >>> sorted(owned_nodes(covers, "cpp_fused_1:3")), owned_nodes(covers, "cpp_fused_0:1")
        (['bn', 'relu'], set())
    """
    def rank(other: str) -> tuple[bool, int]:
        return other.split(".")[0] not in LIBRARY_CALLS, len(covers[other])
    owners: dict[str, str] = {}
    for other in covers:
        for name in covers[other]:
            if name not in owners or rank(other) < rank(owners[name]):
                owners[name] = other
    return {name for name in covers.get(handle, []) if owners[name] == handle}


def _bytes(value: Any) -> dict[str, int]:
    """Bytes per dtype name of the tensors of `value`: each its elements' bytes, or its
    storage's where smaller (an expanded view reads its base once)."""
    counts: dict[str, int] = {}
    for tensor in tensors(value):
        size = tensor.numel() * tensor.element_size()
        try:
            size = min(size, int(tensor.untyped_storage().nbytes()))
        except (RuntimeError, NotImplementedError, TypeError):
            pass
        name = dtype_name(tensor.dtype)
        counts[name] = counts.get(name, 0) + size
    return counts


def _flops(nodes: list[fx.Node]) -> tuple[int, int, str]:
    """(matrix, vector FLOPs, ops without a formula) of `nodes` run again on their fake
    tensors under a FlopMeter (untimed, no data); an op that fails there is named too."""
    values = [n.meta["val"] for n in nodes]
    fake_mode = detect_fake_mode(values)
    failed = []
    with FlopMeter() as meter:
        for n in nodes:
            if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
                continue
            args, kwargs = map_arg((n.args, n.kwargs), lambda a: a.meta.get("val"))
            try:
                with fake_mode if fake_mode is not None else contextlib.nullcontext():
                    n.target(*args, **kwargs)
            except Exception:  # an op the fake tensors cannot run again: its FLOPs uncounted
                failed.append(str(n.target.overloadpacket))
    unknown = [op for op in meter.unknown_since(0).split(", ") + failed if op]
    return meter.total(), meter.vector_total(), ", ".join(dict.fromkeys(unknown))


def kernel_work(gm: fx.GraphModule, covered: set[str]) -> dict[str, Any]:
    """The roofline columns of the kernel covering post-grad nodes `covered` of `gm`:
    flops and vector_flops (capture.flops' formulas), in_bytes (every tensor a covered node
    reads that no covered node makes, each once), out_bytes (every covered node's tensors
    used outside the kernel or returned), param_bytes 0 (a compiled graph takes its
    parameters as inputs), dtype (the dtype moving the most bytes) and unknown_ops; only
    unknown_ops (WORK_UNKNOWN) where a node has no fake tensor, or none is covered.

    Example:
        >>> import torch.fx.experimental.proxy_tensor as proxy
        >>> gm = proxy.make_fx(lambda x, y: (x + y).relu(), tracing_mode="fake")(
        ...     torch.ones(8, 4), torch.ones(8, 4))
        >>> work = kernel_work(gm, {"add", "relu"})
        >>> work["in_bytes"], work["out_bytes"], work["vector_flops"]
        (256, 128, 64)
    """
    nodes = [n for n in gm.graph.nodes if n.name in covered]
    outside = {i for n in nodes for i in n.all_input_nodes if i.name not in covered}
    if not nodes or any("val" not in n.meta for n in [*nodes, *outside]):
        return {"unknown_ops": WORK_UNKNOWN}
    read = _sum(_bytes(n.meta["val"]) for n in outside)
    written = _sum(_bytes(n.meta["val"]) for n in nodes
                   if any(user.name not in covered for user in n.users))
    matrix, vector, unknown = _flops(nodes)
    moved = _sum([read, written])
    return {"flops": matrix, "vector_flops": vector, "in_bytes": sum(read.values()),
            "param_bytes": 0, "out_bytes": sum(written.values()),
            "dtype": max(moved, key=lambda name: moved[name]) if moved else "",
            "unknown_ops": unknown}


def _sum(counts) -> dict[str, int]:
    """Per-dtype byte counts added up."""
    total: dict[str, int] = {}
    for count in counts:
        for name, size in count.items():
            total[name] = total.get(name, 0) + size
    return total
