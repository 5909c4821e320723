"""FLOPs of the untimed analysis run (torch.utils.flop_counter), read per node or module call,
and their display with SI prefixes."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import torch
from torch.utils.flop_counter import FlopCounterMode

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


#: Attention ops CPU runs as one kernel, which torch.utils.flop_counter has no formula for.
_SDPA_OPS = (torch.ops.aten.scaled_dot_product_attention,
             torch.ops.aten._scaled_dot_product_flash_attention_for_cpu)


def _sdpa_flops(query, key, value, *_args, out_shape=None, **_kwargs) -> int:
    """2·L·S·E for q @ kᵀ plus 2·L·S·Ev for the weighted sum, per batch and head (the
    arguments are shapes, not tensors)."""
    *lead, length, embed = query
    return 2 * math.prod(lead) * length * key[-2] * (embed + value[-1])


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
        self._mode: FlopCounterMode | None = None
        self._fastpath = True

    def __enter__(self) -> "FlopMeter":
        self._fastpath = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        with warnings.catch_warnings():  # module-tracking notices are not the user's concern
            warnings.simplefilter("ignore")
            self._mode = FlopCounterMode(
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


def _scaled(value) -> tuple[str, str] | None:
    """(number with 3 significant digits, SI prefix), or None when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    number = float(value)
    if math.isinf(number):
        return "inf", ""
    scale, prefix = next(((s, p) for s, p in _PREFIXES if abs(number) >= s), (1.0, ""))
    return (f"{number / scale:#.3g}".rstrip(".") if prefix else f"{number:.0f}"), prefix


def format_si(value) -> str:
    """A count or rate for a table cell: SI prefix, no unit; "-" when missing.

    Example:
        >>> format_si(1_820_000_000), format_si(950), format_si(float("nan"))
        ('1.82G', '950', '-')
    """
    scaled = _scaled(value)
    return "-" if scaled is None else "".join(scaled)


def format_flops(value, unit: str = "FLOP") -> str:
    """A FLOP count or rate with an SI prefix and 3 significant digits; "-" when missing.

    Example:
        >>> format_flops(1_820_000_000), format_flops(2.5e10, "FLOP/s"), format_flops(0)
        ('1.82 GFLOP', '25.0 GFLOP/s', '0 FLOP')
    """
    scaled = _scaled(value)
    return "-" if scaled is None else f"{scaled[0]} {scaled[1]}{unit}"


def with_flop_rate(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` plus `flop_per_s` (achieved FLOP/s: flops / median seconds; NaN where either
    is 0) when it has a `flops` column.

    Example:
        >>> with_flop_rate(pd.DataFrame({"flops": [2000, 0], "median": [1000.0, 5.0]}))[
        ...     "flop_per_s"].tolist()
        [2000000000.0, nan]
    """
    if "flops" not in frame:
        return frame
    flops = pd.to_numeric(frame["flops"], errors="coerce").astype(np.float64)
    median = frame["median"].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = flops * 1e9 / median
    frame["flop_per_s"] = rate.where((flops > 0) & (median > 0))
    return frame
