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


# FLOPs of the ops torch.utils.flop_counter has no formula for ("vector" FLOPs: element-wise,
# reductions, norms, softmax, pooling), per op, from the op's tensors (not shapes). Counted
# apart from torch's matrix FLOPs (FlopMeter.vector_total), each a convention stated in
# docs/roofline.md: one FLOP per output element of an element-wise op (transcendental ones
# too), one per input element of a reduction.

def _numel(value: Any) -> int:
    """Elements of a tensor, or of the first tensor of a tuple or list (an op's main output)."""
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, (tuple, list)) and value:
        return _numel(value[0])
    return 0


def _per_output(count: int):
    """`count` FLOPs per element of the op's (first) output."""
    return lambda out, args, kwargs: count * _numel(out)


def _per_input(count: int):
    """`count` FLOPs per element of the op's first argument."""
    return lambda out, args, kwargs: count * _numel(args[0] if args else None)


def _pooling(out: Any, args: tuple, kwargs: dict) -> int:
    """A window pool: one FLOP (compare or add) per output element per window element."""
    window = args[1] if len(args) > 1 else kwargs.get("kernel_size", 1)
    return _numel(out) * math.prod(window if isinstance(window, (list, tuple)) else [window])


def _batch_norm(out: Any, args: tuple, kwargs: dict) -> int:
    """Normalize and scale (4 per element); 3 more per element for the batch statistics
    when training (native_batch_norm's and batch_norm's `training` argument)."""
    elements = _numel(args[0])
    training = len(args) > 5 and args[5] is True
    return (7 if training else 4) * elements


_ELEMENTWISE = ("add", "sub", "rsub", "mul", "div", "neg", "abs", "exp", "exp2", "expm1",
                "log", "log1p", "log2", "sqrt", "rsqrt", "reciprocal", "square", "pow",
                "sigmoid", "tanh", "relu", "gelu", "silu", "mish", "hardtanh", "hardswish",
                "hardsigmoid", "leaky_relu", "elu", "selu", "celu", "softplus", "threshold",
                "clamp", "clamp_min", "clamp_max", "maximum", "minimum", "where", "sin", "cos",
                "erf", "sign", "floor", "ceil", "round", "trunc", "fmod", "remainder", "lerp",
                "addcmul", "addcdiv", "masked_fill", "gt", "lt", "ge", "le", "eq", "ne",
                "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or",
                "bitwise_not", "sigmoid_backward", "tanh_backward",
                "threshold_backward", "gelu_backward", "silu_backward")
_REDUCTIONS = ("sum", "mean", "amax", "amin", "max", "min", "prod", "argmax", "argmin",
               "any", "all", "cumsum", "norm", "linalg_vector_norm", "_adaptive_avg_pool2d",
               "adaptive_avg_pool2d", "adaptive_avg_pool1d", "adaptive_max_pool2d",
               "_adaptive_avg_pool3d")
#: aten op name (``str`` of its overload packet) -> FLOPs from (out, args, kwargs).
VECTOR_FORMULAS: dict[str, Any] = {
    **{f"aten.{name}{suffix}": _per_output(1) for name in _ELEMENTWISE for suffix in ("", "_")},
    **{f"aten.{name}": _per_input(1) for name in _REDUCTIONS},
    **{f"aten.{name}": _per_input(2) for name in ("var", "std", "var_mean", "std_mean")},
    **{f"aten.{name}": _per_input(5) for name in ("softmax", "_softmax", "log_softmax",
                                                    "_log_softmax", "_safe_softmax")},
    **{f"aten.{name}": _per_input(8) for name in ("layer_norm", "native_layer_norm",
                                                    "group_norm", "native_group_norm")},
    **{f"aten.{name}": _per_input(4) for name in ("rms_norm", "_fused_rms_norm")},
    **{f"aten.{name}": _batch_norm for name in ("batch_norm", "native_batch_norm")},
    "aten._native_batch_norm_legit_no_training": _per_input(4),
    **{f"aten.{name}": _pooling for name in ("max_pool1d", "max_pool2d", "max_pool3d",
                                             "max_pool2d_with_indices", "avg_pool1d",
                                             "avg_pool2d", "avg_pool3d")},
    # Inductor's post-grad max pooling (compiled kernels' work: capture.kernel_work)
    **{f"prims.{name}": _pooling for name in ("_low_memory_max_pool_with_offsets",
                                              "_low_memory_max_pool2d_with_offsets")},
}
#: aten ops that move or make data without arithmetic (0 FLOPs, known): views, copies,
#: layout changes, indexing, embeddings (bytes only), factories.
ZERO_FLOP_OPS = frozenset(f"aten.{name}" for name in (
    "view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", "permute", "transpose",
    "t", "expand", "expand_as", "contiguous", "clone", "copy", "copy_", "_to_copy", "to",
    "cat", "stack", "slice", "select", "index", "index_select", "gather", "scatter", "split",
    "split_with_sizes", "chunk", "unbind", "narrow", "unsqueeze", "squeeze", "flatten",
    "unflatten", "as_strided", "alias", "detach", "detach_", "lift_fresh", "lift", "empty",
    "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "arange", "new_zeros", "new_ones", "new_empty", "new_full", "fill", "fill_",
    "zero_", "scalar_tensor", "repeat", "constant_pad_nd", "pad", "roll", "flip", "tril",
    "triu", "embedding", "embedding_bag", "_embedding_bag", "dropout", "native_dropout",
    "feature_dropout", "masked_select", "nonzero", "topk", "sort", "one_hot", "_local_scalar_dense",
    "item", "rand", "randn", "randint", "bernoulli", "t_", "transpose_", "unsqueeze_",
    "squeeze_", "movedim", "split_copy", "slice_scatter", "select_scatter", "index_put",
    "index_put_", "masked_scatter", "tile", "diagonal", "clone_", "resize_", "set_",
    "_assert_tensor_metadata", "sym_constrain_range_for_size", "_assert_async")) | {
    "prim.device"}  # Inductor's post-grad graphs ask a tensor's device


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

    The FLOPs of one node or call are `total()` after it minus `total()` before it: torch's
    matrix FLOPs (torch.utils.flop_counter's formulas: matmul, conv, attention). The ops
    torch has no formula for are counted apart, by `vector_total()` (element-wise ops,
    reductions, norms, softmax, pooling: VECTOR_FORMULAS), or noted by `unknown_since()` (ops
    in neither table nor ZERO_FLOP_OPS, such as torchvision's nms). The fused fast path of nn.MultiheadAttention and
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
        self._vector = 0
        self._unknown: list[str] = []  # aten ops run without a formula, in order

    def __enter__(self) -> "FlopMeter":
        self._fastpath = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        with warnings.catch_warnings():  # module-tracking notices are not the user's concern
            warnings.simplefilter("ignore")
            self._mode = _counter_type()(
                display=False,
                custom_mapping=dict.fromkeys(_SDPA_OPS, _sdpa_flops))
            self._mode._count_flops = functools.partial(self._count, self._mode._count_flops)
            self._mode.__enter__()
        return self

    def _count(self, torch_count: Any, func_packet: Any, out: Any, args: tuple,
               kwargs: dict) -> Any:
        """torch's count of an op with a formula; else its VECTOR_FORMULAS count, or the op
        noted as unknown unless it is one of ZERO_FLOP_OPS."""
        if func_packet in self._mode.flop_registry:
            return torch_count(func_packet, out, args, kwargs)
        name = str(func_packet)
        formula = VECTOR_FORMULAS.get(name)
        if formula is not None:
            self._vector += int(formula(out, args, kwargs))
        elif name not in ZERO_FLOP_OPS:
            self._unknown.append(name)
        return out

    def __exit__(self, *exc_info) -> None:
        try:
            self._mode.__exit__(*exc_info)
        finally:
            torch.backends.mha.set_fastpath_enabled(self._fastpath)

    def total(self) -> int:
        """FLOPs counted so far."""
        return int(self._mode.get_total_flops())

    def vector_total(self) -> int:
        """FLOPs of element-wise ops, reductions, norms, softmax and pooling counted so far
        (VECTOR_FORMULAS), apart from `total()`.

        Example:
            >>> with FlopMeter() as meter:
            ...     _ = torch.relu(torch.zeros(5, 8)).sum()
            >>> meter.total(), meter.vector_total()  # 40 relu outputs, 40 summed inputs
            (0, 80)
        """
        return self._vector

    def unknown_count(self) -> int:
        """How many op calls so far had no FLOP formula (neither torch's nor ours)."""
        return len(self._unknown)

    def unknown_since(self, count: int) -> str:
        """The distinct ops without a formula run after `unknown_count()` was `count`,
        comma-separated ("" when none).

        Example:
            >>> with FlopMeter() as meter:
            ...     _ = torch.cdist(torch.zeros(2, 3), torch.zeros(4, 3))
            >>> meter.unknown_since(0)
            'aten._cdist_forward'
        """
        return ", ".join(dict.fromkeys(self._unknown[count:]))
