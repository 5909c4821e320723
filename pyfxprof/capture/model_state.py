"""Running a user's model in eval mode and putting back every module's training flag, its
buffer and parameter tensors (the same objects) and the values of the buffers its forward
changed in place afterwards; the autograd and numeric modes calls run in; the global random
state kept as the caller left it."""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings
from typing import Any, Callable, Iterator, TypeVar, cast

import torch
import torch.utils._pytree as pytree

from ..errors import PyfxprofError
from .exported import is_exported
from .inputs import split_inputs

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def evaluation_mode(model: torch.nn.Module, enabled: bool = True) -> Iterator[None]:
    """Put `model` in eval mode for the block (an exported program, which has no modes, is
    left as it is), then restore each submodule's own flag,
    rebind its buffers and parameters to the tensors it had before, and copy back the values
    of the buffers changed in place (a step counter's ``add_``, BatchNorm statistics); see
    InPlaceGuard.

    Example:
        >>> m = torch.nn.Dropout().train()
        >>> with evaluation_mode(m):
        ...     m.training
        False
        >>> m.training
        True
    """
    with _one_thread_at_a_time(model):
        yield from _evaluation_mode(model, enabled)


#: Models inside evaluation_mode: id -> (owning thread, depth).
_ACTIVE: dict[int, tuple[int, int]] = {}
_ACTIVE_LOCK = threading.Lock()


@contextlib.contextmanager
def _one_thread_at_a_time(model: torch.nn.Module) -> Iterator[None]:
    """Refuse a second thread profiling the same model: its flags would be saved in eval
    mode and restored so (the user's train() flag lost). Re-entry from one thread is fine."""
    key, me = id(model), threading.get_ident()
    with _ACTIVE_LOCK:
        owner, depth = _ACTIVE.get(key, (me, 0))
        if owner != me:
            raise PyfxprofError(f"this {type(model).__name__} is already being profiled in "
                                "another thread; profile one model from one thread at a time "
                                "(or profile a copy.deepcopy of it)")
        _ACTIVE[key] = (me, depth + 1)
    try:
        yield
    finally:
        with _ACTIVE_LOCK:
            if depth:
                _ACTIVE[key] = (me, depth)
            else:
                del _ACTIVE[key]


def _evaluation_mode(model: torch.nn.Module, enabled: bool) -> Iterator[None]:
    modules = list(model.modules())
    flags = [(module, module.training) for module in modules]
    # forward may rebind a buffer or parameter (`self.steps = self.steps + 1`), under
    # inference mode to an inference tensor: put back the very tensors the user had.
    tensors = [(module, dict(module._buffers), dict(module._parameters)) for module in modules]
    guard = InPlaceGuard(model)
    if enabled and not is_exported(model):  # an exported program has no modes to switch
        model.eval()
    try:
        yield
    finally:
        for module, training in flags:
            module.training = training
        for module, buffers, parameters in tensors:
            module._buffers.clear()
            module._buffers.update(buffers)
            module._parameters.clear()
            module._parameters.update(parameters)
        guard.restore()


class InPlaceGuard:
    """Undoes in-place changes to a model's buffers: each buffer is cloned on entry, and
    `restore()` copies the saved values back into every buffer that changed (same tensor,
    storage, data_ptr and requires_grad), found by its version counter (``tensor._version``,
    moved by in-place ops) or, as kernels updating a mutable argument such as BatchNorm's
    running statistics do not move it, by comparing values. An unchanged buffer is not
    written to (its version stays). Parameters are not copied (that would double the
    model's memory): one whose version counter or storage moved is warned about.

    Example:
        >>> bn = torch.nn.BatchNorm1d(2).train()
        >>> guard = InPlaceGuard(bn); _ = bn(torch.randn(4, 2)); guard.restore()
        >>> bn.running_mean.tolist(), bn.num_batches_tracked.item()
        ([0.0, 0.0], 0)
    """

    def __init__(self, model: torch.nn.Module) -> None:
        with torch.no_grad():
            self.buffers = [(name, tensor, _version(tensor), tensor.detach().clone())
                            for name, tensor in model.named_buffers()]
        self.parameters = [(name, tensor, _version(tensor), tensor.data_ptr())
                           for name, tensor in model.named_parameters()]

    def changed(self) -> list[str]:
        """The names of the buffers changed since entry."""
        return [name for name, tensor, version, saved in self.buffers
                if version is None or _version(tensor) != version or not _same(tensor, saved)]

    def restore(self) -> None:
        """Copy back every buffer changed in place; warn about changed parameters."""
        changed = set(self.changed())
        for name, tensor, _, saved in self.buffers:
            if name not in changed:
                continue
            with torch.inference_mode() if tensor.is_inference() else torch.no_grad():
                if tensor.shape != saved.shape:  # resize_() in forward
                    tensor.resize_(saved.shape)
                tensor.copy_(saved)
        moved = [name for name, tensor, version, pointer in self.parameters
                 if _version(tensor) != version or tensor.data_ptr() != pointer]
        if moved:
            warnings.warn(f"pyfxprof: the model's forward changed parameter(s) "
                          f"{', '.join(moved[:5])} in place while it was profiled; buffers "
                          "are restored but parameters are not copied: profile a "
                          "copy.deepcopy of the model to keep them", stacklevel=2)


def _same(tensor: torch.Tensor, saved: torch.Tensor) -> bool:
    """Same shape and values (NaN where the saved copy has NaN counts as the same).

    Example:
        >>> nan = float("nan"); _same(torch.tensor([nan, 1.0]), torch.tensor([nan, 1.0]))
        True
    """
    if tensor.shape != saved.shape or tensor.dtype != saved.dtype:
        return False
    if torch.equal(tensor, saved):
        return True
    return saved.is_floating_point() and bool((tensor.eq(saved) | tensor.isnan()
                                                & saved.isnan()).all())


def _version(tensor: torch.Tensor) -> int | None:
    """The tensor's version counter (None for an inference tensor, which has none)."""
    return None if tensor.is_inference() else tensor._version


def keeping_rng_state(function: F) -> F:
    """``function`` (profile()) leaving torch's global random state as it found it, CPU and
    every initialised CUDA device: the capture, analysis, warm-up and timed runs draw dropout
    masks and random inputs that the caller's own calls must draw as if unprofiled.

    Example:
        >>> draw = keeping_rng_state(lambda: torch.rand(1))
        >>> _ = torch.manual_seed(0); _ = draw()
        >>> torch.rand(1)  # the first draw after the seed, as if draw() had not run
        tensor([0.4963])
    """
    @functools.wraps(function)
    def keeping(*args, **kwargs):
        devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
        with torch.random.fork_rng(devices=devices):
            return function(*args, **kwargs)
    return cast(F, keeping)


def forked_rng(model: torch.nn.Module) -> contextlib.AbstractContextManager:
    """torch's random state forked for CPU and the model's CUDA devices: what runs inside
    (a capture, a run beside the user's call) draws nothing from the user's generators.

    Example:
        >>> model = torch.nn.Linear(1, 1); _ = torch.manual_seed(0)
        >>> with forked_rng(model):
        ...     _ = torch.rand(1)
        >>> torch.rand(1)
        tensor([0.4963])
    """
    devices = sorted({t.device.index or 0 for t in model.parameters() if t.is_cuda})
    return torch.random.fork_rng(devices=devices)


def grad_context(grad: bool) -> contextlib.AbstractContextManager:
    """torch.inference_mode() unless `grad` asks to keep autograd."""
    return contextlib.nullcontext() if grad else torch.inference_mode()


def autograd_mode() -> str:
    """The autograd mode calls made now run in: "inference_mode", "no_grad" or "grad".

    Example:
        >>> with torch.no_grad():
        ...     autograd_mode()
        'no_grad'
    """
    if torch.is_inference_mode_enabled():
        return "inference_mode"
    return "grad" if torch.is_grad_enabled() else "no_grad"


#: Device types whose autocast state numeric_mode reads (the model's own is added).
AUTOCAST_DEVICE_TYPES = ("cpu", "cuda")


def numeric_mode(model: torch.nn.Module, example_inputs: Any) -> dict:
    """The numbers a run computes with, as `meta` keeps them: ``autocast`` (device type ->
    dtype, for each device type the caller's context has autocast on; empty when off),
    ``param_dtypes`` (the dtypes of the parameters, most elements first), ``input_dtypes``
    and ``input_memory_formats`` (of the tensor inputs, in order of first appearance:
    "contiguous", "channels_last", "channels_last_3d" or "strided"). The autograd mode is
    autograd_mode's, read where the calls run.

    Example:
        >>> with torch.autocast("cpu", dtype=torch.bfloat16):
        ...     mode = numeric_mode(torch.nn.Linear(2, 2), (torch.zeros(1, 2),))
        >>> mode["autocast"], mode["param_dtypes"], mode["input_memory_formats"]
        ({'cpu': 'bfloat16'}, ['float32'], ['contiguous'])
    """
    devices = dict.fromkeys([*AUTOCAST_DEVICE_TYPES,
                             *(p.device.type for p in list(model.parameters())[:1])])
    autocast = {device: dtype_name(torch.get_autocast_dtype(device)) for device in devices
                if _autocast_enabled(device)}
    counts: dict[str, int] = {}
    for parameter in model.parameters():
        name = dtype_name(parameter.dtype)
        counts[name] = counts.get(name, 0) + parameter.numel()
    tensors = [value for value in pytree.tree_leaves(split_inputs(example_inputs))
               if isinstance(value, torch.Tensor)]
    return {"autocast": autocast, "param_dtypes": sorted(counts, key=lambda name: counts[name], reverse=True),
            "input_dtypes": list(dict.fromkeys(dtype_name(t.dtype) for t in tensors)),
            "input_memory_formats": list(dict.fromkeys(memory_format(t) for t in tensors))}


def memory_format(tensor: torch.Tensor) -> str:
    """"contiguous", "channels_last" (4-d), "channels_last_3d" (5-d) or "strided" (neither).

    Example:
        >>> memory_format(torch.zeros(1, 3, 4, 4).to(memory_format=torch.channels_last))
        'channels_last'
    """
    if tensor.is_contiguous():
        return "contiguous"
    for name, kind, dims in (("channels_last", torch.channels_last, 4),
                             ("channels_last_3d", torch.channels_last_3d, 5)):
        if tensor.dim() == dims and tensor.is_contiguous(memory_format=kind):
            return name
    return "strided"


def _autocast_enabled(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except RuntimeError:  # a device type this torch has no autocast for
        return False


def dtype_name(dtype: torch.dtype) -> str:
    """A dtype's name as pyfxprof writes it, without torch's prefix.

    >>> dtype_name(torch.bfloat16)
    'bfloat16'
    """
    return str(dtype).removeprefix("torch.")
