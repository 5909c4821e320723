"""FLOPs of the untimed analysis run (torch.utils.flop_counter), read per node or module call.

Their display (SI prefixes, achieved FLOP/s) is in pyfxprof.data.units and
pyfxprof.stats.node_statistics."""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import sys
import warnings
from typing import Any, Iterator

import torch

from .torch_compat import undecorated

#: Attention ops CPU runs as one kernel, which torch.utils.flop_counter has no formula for.
_SDPA_OPS = (torch.ops.aten.scaled_dot_product_attention,
             torch.ops.aten._scaled_dot_product_flash_attention_for_cpu)


def _sdpa_flops(query, key, value, *_args, out_shape=None, **_kwargs) -> int:
    """2·L·S·E for q @ kᵀ plus 2·L·S·Ev for the weighted sum, per batch and head (the
    arguments are shapes, not tensors)."""
    *lead, length, embed = query
    return 2 * math.prod(lead) * length * key[-2] * (embed + value[-1])


@contextlib.contextmanager
def _without_triton() -> Iterator[None]:
    """Imports inside see no triton while this process has not used CUDA and not imported
    triton: torch.utils.flop_counter imports it (about a second) only to accept FLOP formulas
    for triton kernels, which run on a GPU. (A formula registered for a triton kernel after
    this import, in a process that had not used CUDA, is refused by torch.)"""
    if "triton" in sys.modules or torch.cuda.is_initialized():
        yield
        return
    log = logging.getLogger("torch.utils.flop_counter")  # its "triton not found" warning
    sys.modules["triton"] = None  # type: ignore[assignment]  # imports of it raise ImportError
    log.disabled = True
    try:
        yield
    finally:
        del sys.modules["triton"]
        log.disabled = False


@functools.cache
def _counter_type() -> type:
    """torch's FlopCounterMode, counting without the TorchDynamo guard torch wraps every
    dispatch mode's __torch_dispatch__ in (its first call imports Dynamo, seconds) while
    Dynamo is not loaded, when nothing can be compiling through the mode. Imported on first
    use (see _without_triton)."""
    with _without_triton():
        from torch.utils.flop_counter import FlopCounterMode, _FlopCounterMode

    class UncompiledCounting(_FlopCounterMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False

        # TorchDispatchMode wraps each subclass's __torch_dispatch__ at class creation (the
        # Dynamo guard, where torch has it)
        __torch_dispatch__ = undecorated(_FlopCounterMode.__torch_dispatch__)

    class Counter(FlopCounterMode):
        def __enter__(self) -> "Counter":
            if "torch._dynamo" in sys.modules:
                return super().__enter__()
            self.flop_counts.clear()
            self.mod_tracker.__enter__()
            self.mode = UncompiledCounting(self)
            self.mode.__enter__()
            return self
    return Counter


class FlopMeter:
    """Counts the FLOPs of every op run inside it; `total()` is the running count.

    The FLOPs of one node or call are `total()` after it minus `total()` before it. Ops
    without a FLOP formula in torch.utils.flop_counter (element-wise ops, custom ops such as
    torchvision's nms) count 0. The fused fast path of nn.MultiheadAttention and
    nn.TransformerEncoderLayer has no formula either, so it is switched off inside the meter:
    the same math then runs as counted ops (this run is untimed); CPU attention kernels are
    counted with `_sdpa_flops`.

    Example:
        >>> import torch
        >>> with FlopMeter() as meter:
        ...     _ = torch.nn.Linear(8, 16)(torch.zeros(5, 8))
        >>> meter.total()  # 2 * in * out * batch
        1280
    """

    def __init__(self) -> None:
        self._mode: Any = None  # a FlopCounterMode (_counter_type)
        self._fastpath = True

    def __enter__(self) -> "FlopMeter":
        self._fastpath = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        with warnings.catch_warnings():  # module-tracking notices are not the user's concern
            warnings.simplefilter("ignore")
            self._mode = _counter_type()(
                display=False,
                custom_mapping=dict.fromkeys(_SDPA_OPS, _sdpa_flops))
            self._mode.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self._mode.__exit__(*exc_info)
        finally:
            torch.backends.mha.set_fastpath_enabled(self._fastpath)

    def total(self) -> int:
        """FLOPs counted so far."""
        return int(self._mode.get_total_flops())
