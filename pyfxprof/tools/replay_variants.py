"""The variants a replay tries on a rebuilt node (channels_last, bf16, fp16, threads=N,
contiguous, inference_mode, compile, and on a GPU cuda_graph): each one a no-argument call
built beside the as-is call, with the context it runs in (threads restored after each
block)."""

from __future__ import annotations

import contextlib
import copy
import functools
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..errors import ArgumentError, PyfxprofError
from ..run.bench import thread_count
from ..run.replay_build import Rebuilt
from ..capture.node_bytes import tensors
from ..capture.inputs import map_tensors
from ..run.replay_inplace import bound, on_fresh_copies

#: The variants by name ("threads=N" takes a count).
VARIANTS = ("channels_last", "bf16", "fp16", "threads=N", "contiguous", "inference_mode",
            "compile", "cuda_graph")
#: Relative difference (max abs error over the reference output's max magnitude) a variant
#: computing in this dtype may show before it is flagged.
TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 5e-2,
             torch.float16: 1e-2}


@dataclass
class VariantCall:
    """A variant ready to time: ``call()`` runs it inside ``context()``; ``dtype`` is what it
    computes in (its tolerance); ``fresh``, for a node that writes to its inputs, makes calls
    each on its own fresh copy of the variant's inputs (else None)."""

    name: str
    call: Callable[[], Any]
    context: Callable[[], contextlib.AbstractContextManager]
    dtype: torch.dtype
    fresh: Callable[[], Callable[[], Any]] | None = None


def _float_dtype(args: tuple, kwargs: dict) -> torch.dtype:
    return next((t.dtype for t in tensors((args, kwargs)) if t.dtype.is_floating_point),
                torch.float32)


def _changed(built: Rebuilt, args: tuple, kwargs: dict,
             change: Callable[[torch.Tensor], torch.Tensor], module_change) -> tuple:
    """A copy of the node's target with `change` applied to its inputs (and module), and
    those inputs: (target, args, kwargs)."""
    new_args, new_kwargs = map_tensors(args, change), map_tensors(kwargs, change)
    target = built.target if built.module is None else module_change(copy.deepcopy(built.module))
    return target, new_args, new_kwargs


def _ready(name: str, built: Rebuilt, changed: tuple, context, dtype) -> VariantCall:
    """The variant's call on its inputs, and on fresh copies of them for an in-place node."""
    return VariantCall(name, bound(*changed), context, dtype,
                       on_fresh_copies(*changed) if built.mutates else None)


def _cast(dtype: torch.dtype) -> Callable[[torch.Tensor], torch.Tensor]:
    return lambda t: t.to(dtype) if t.is_floating_point() else t


def _channels_last(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t


def variant_call(name: str, built: Rebuilt, args: tuple, kwargs: dict) -> VariantCall:
    """The variant `name` of the node on these inputs, or an ArgumentError naming the choices.

    Example:
        >>> from pyfxprof.run.replay_build import Rebuilt
        >>> spec = {"args": [{"tensor": [2, 3], "dtype": "float32", "stride": [3, 1],
        ...                   "device": "cpu"}], "kwargs": {}}
        >>> built = Rebuilt("relu", "call_function", "torch.relu", torch.relu, spec, None, 1.0)
        >>> variant_call("bf16", built, *built.inputs()).call().dtype
        torch.bfloat16
    """
    base = _float_dtype(args, kwargs)
    same = lambda: contextlib.nullcontext()  # noqa: E731
    if name in ("bf16", "fp16"):
        dtype = torch.bfloat16 if name == "bf16" else torch.float16
        changed = _changed(built, args, kwargs, _cast(dtype), lambda m: m.to(dtype))
        return _ready(name, built, changed, same, dtype)
    if name == "channels_last":
        changed = _changed(built, args, kwargs, _channels_last,
                           lambda m: m.to(memory_format=torch.channels_last))
        return _ready(name, built, changed, same, base)
    if name == "contiguous":
        changed = _changed(built, args, kwargs, lambda t: t.contiguous(), lambda m: m)
        return _ready(name, built, changed, same, base)
    as_is = _changed(built, args, kwargs, lambda t: t, lambda m: m)
    if name == "inference_mode":
        return _ready(name, built, as_is, torch.inference_mode, base)
    if name == "compile":
        target = torch.compile(built.target if built.module is None
                               else copy.deepcopy(built.module))
        return _ready(name, built, (target, args, kwargs), same, base)
    if name == "cuda_graph":
        return VariantCall(name, cuda_graph_call(built, *as_is), same, base)
    if name.startswith("threads="):
        count = name.split("=", 1)[1]
        if not count.isdigit() or int(count) < 1:
            raise ArgumentError(f"variant {name!r}: threads=N takes a count of 1 or more")
        return _ready(name, built, as_is, functools.partial(thread_count, int(count)), base)
    raise ArgumentError(f"unknown variant {name!r}; choose from {list(VARIANTS)}")


def cuda_graph_call(built: Rebuilt, target: Callable, args: tuple,
                    kwargs: dict) -> Callable[[], Any]:
    """A call replaying the node captured in a CUDA graph (on its own copies of the inputs,
    three warm-up calls on a side stream first), or, when it cannot be, a call raising one
    line that says why (a CPU node; an in-place node, whose graph would rerun on inputs it
    already changed).

    Example:
        >>> from pyfxprof.run.replay_build import Rebuilt
        >>> spec = {"args": [{"tensor": [2], "dtype": "float32", "stride": [1],
        ...                   "device": "cpu"}], "kwargs": {}}
        >>> built = Rebuilt("relu", "call_function", "torch.relu", torch.relu, spec, None, 1.0)
        >>> cuda_graph_call(built, torch.relu, *built.inputs())()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pyfxprof.errors.PyfxprofError: cuda_graph replays CUDA work: node 'relu' runs on cpu ...
    """
    device = next((t.device for t in tensors((args, kwargs))), torch.device("cpu"))
    why = (f"cuda_graph replays CUDA work: node {built.name!r} runs on {device.type} "
           f"(profile it with device='cuda')" if device.type != "cuda" else
           f"cuda_graph: node {built.name!r} writes to its inputs, and a graph replays on "
           f"the same memory (time it without cuda_graph)" if built.mutates else "")
    if why:
        def refused():
            raise PyfxprofError(why)
        return refused
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(3):
            target(*args, **kwargs)
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        output = target(*args, **kwargs)

    def replayed():
        graph.replay()
        return output
    return replayed
