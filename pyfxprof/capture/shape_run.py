"""The separate, untimed analysis run: per-node input/output shapes, output bytes and FLOPs, and a
clear error naming the node when the example inputs do not fit the model."""

from __future__ import annotations

import contextlib
from typing import Any

import torch
import torch.fx as fx

from ..errors import PyfxprofError, first_line
from .call_spec import call_spec
from .flops import FlopMeter
from .memory import allocator_events, cuda_device_of, cuda_node_memory, memory_wanted, node_range
from .model_state import dtype_name
from .node_bytes import node_bytes
from .node_table import target_name
from .tracing import TIMED_OPS


def describe(value: Any) -> str:
    """Shapes and dtypes of a value: '[5, 3, 224, 224] float32', tuples as '(..., ...)'.

    Example:
        >>> describe(torch.zeros(2, 3))
        '[2, 3] float32'
    """
    if isinstance(value, torch.Tensor):
        return f"{list(value.shape)} {dtype_name(value.dtype)}"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(describe(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {describe(v)}" for k, v in value.items()) + "}"
    return type(value).__name__


def tensor_bytes(value: Any) -> int:
    """Bytes of every tensor in `value` (nested tuples, lists, dicts)."""
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (tuple, list)):
        return sum(tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    return 0


class ShapeRecorder(fx.Interpreter):
    """Runs the graph once, recording per node input/output shapes, output bytes and FLOPs
    (the latter read from `meter`, which must be active during the run)."""

    def __init__(self, module: fx.GraphModule, meter: FlopMeter,
                 cuda_device: torch.device | None = None) -> None:
        super().__init__(module)
        self.meter = meter
        self.cuda_device = cuda_device
        self.info: dict[str, dict[str, Any]] = {}
        self.ranges = memory_wanted()  # a record_function range per node for allocator_events

    def run_node(self, n: fx.Node) -> Any:
        if n.op not in TIMED_OPS:
            return super().run_node(n)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        flops_before, vector_before = self.meter.total(), self.meter.vector_total()
        unknown_before = self.meter.unknown_count()
        try:
            with self._set_current_node(n), cuda_node_memory(self.cuda_device) as memory, (
                    node_range(n.name) if self.ranges else contextlib.nullcontext()):
                result = getattr(self, n.op)(n.target, args, kwargs)
        except Exception as error:
            raise PyfxprofError(
                f"node {n.name!r} ({n.op} {target_name(n)}) failed on inputs {describe(args)}: "
                f"{type(error).__name__}: {first_line(error)} — check the input shapes") from None
        self.info[n.name] = {"input_shapes": describe(args), "output_shapes": describe(result),
                             "call_args": call_spec(args, kwargs),
                             "out_bytes": tensor_bytes(result),
                             "flops": self.meter.total() - flops_before,
                             "vector_flops": self.meter.vector_total() - vector_before,
                             "unknown_ops": self.meter.unknown_since(unknown_before),
                             **node_bytes(self.module.get_submodule(str(n.target))
                                          if n.op == "call_module" else None, args, result,
                                          kwargs)}
        if self.cuda_device is not None:
            self.info[n.name].update(alloc_delta_bytes=memory.alloc_delta_bytes,
                                     peak_bytes=memory.peak_bytes,
                                     model_peak_bytes=memory.absolute_peak_bytes)
        return result


def analyse(gm: fx.GraphModule, args: tuple) -> tuple[Any, dict[str, dict[str, Any]]]:
    """Run `gm` once untimed; return (output, per-node info keyed by node name): input_shapes,
    output_shapes, call_args (capture.call_spec: the call as JSON), out_bytes, flops, and for the roofline vector_flops, unknown_ops and the
    bytes of capture.node_bytes; on CUDA also alloc_delta_bytes, peak_bytes (above the
    allocation at the node's start) and model_peak_bytes (the allocator's peak so far); inside
    memory.profiling_memory() also the ALLOCATOR_COLUMNS from torch.profiler's allocator events.

    Example:
        >>> gm = fx.symbolic_trace(torch.nn.Linear(4, 2))
        >>> _, info = analyse(gm, (torch.zeros(3, 4),))
        >>> info["linear"]["output_shapes"]
        '[3, 2] float32'
    """
    cuda_device = cuda_device_of(args)
    memory: contextlib.AbstractContextManager[dict[str, dict[str, int]]] = (
        allocator_events(cuda_device is not None) if memory_wanted() else contextlib.nullcontext({}))
    try:
        with FlopMeter() as meter, memory as figures:
            recorder = ShapeRecorder(gm, meter, cuda_device)
            output = recorder.run(*args)
    except PyfxprofError as error:  # Interpreter.run appends the FX node dump: keep one line
        raise PyfxprofError(first_line(error)) from None
    for name, node_figures in figures.items():
        recorder.info[name].update(node_figures)
    return output, recorder.info
