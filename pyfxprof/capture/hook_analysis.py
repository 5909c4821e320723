"""The untimed analysis run of a hooks capture: forward pre/post hooks on the hook leaves record
every call's begin/end order, input and output shapes, output bytes, FLOPs, source line and (with
profile_memory=True) allocator figures.

Every call of a hooked module is one node, in call order: a module called twice gives two
nodes (`relu`, `relu_1`), as FX does. Hooks exist only while a `hooked` block runs, so the
model is left as it was. The timed runs' marking hooks are pyfxprof.timing.hook_timing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import torch

from ..errors import PyfxprofError, first_line
from .shape_run import describe, tensor_bytes
from .flops import FlopMeter
from .memory import allocator_events, cuda_device_of, memory_wanted, node_range
from .source import call_source

Leaves = list[tuple[str, torch.nn.Module]]


@contextlib.contextmanager
def hooked(leaves: Leaves, pre: Callable[[int], Callable],
           post: Callable[[int], Callable]) -> Iterator[None]:
    """Within the block, leaf k has forward pre-hook `pre(k)` (run last) and forward hook
    `post(k)` (run first); all are removed on exit, even after an error.

    Example:
        >>> calls, relu = [], torch.nn.ReLU()
        >>> with hooked([("", relu)], lambda k: lambda m, a: calls.append(("pre", k)),
        ...             lambda k: lambda m, a, out: calls.append(("post", k))):
        ...     _ = relu(torch.zeros(1))
        >>> calls, len(relu._forward_pre_hooks), len(relu._forward_hooks)
        ([('pre', 0), ('post', 0)], 0, 0)
    """
    handles = []
    try:
        for k, (_, module) in enumerate(leaves):
            handles.append(module.register_forward_pre_hook(pre(k)))
            handles.append(module.register_forward_hook(post(k), prepend=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


@dataclass
class HookAnalysis:
    """What one untimed, hooked run of the model saw.

    calls: leaf index of each call, in begin order (the nodes). events: the expected mark
    sequence of a run (2k begins and 2k+1 ends leaf k). begin_pos, end_pos: each call's
    positions in `events`. info: per call input_shapes, output_shapes, out_bytes, flops, source,
    source_stack and, with profile_memory=True, memory.ALLOCATOR_COLUMNS.
    """

    calls: list[int]
    events: np.ndarray
    begin_pos: np.ndarray
    end_pos: np.ndarray
    info: list[dict[str, Any]]
    flops: int


class _CallRecorder:
    """Hooks recording every call's events, shapes, output bytes, FLOPs and source line, and
    putting a memory.node_range named by the call's index around it when `ranges`."""

    def __init__(self, meter: FlopMeter, ranges: bool = False) -> None:
        self.meter = meter
        self.events: list[int] = []  # 2k at call k's start, 2k + 1 at its end
        self.calls: list[int] = []  # the hooked module's number, per call
        self.info: list[dict[str, Any]] = []
        self._open: list[int] = []  # calls begun and not ended
        self.ranges: dict[int, Any] | None = {} if ranges else None

    def pre(self, k: int) -> Callable:
        def hook(module, inputs) -> None:
            index = len(self.calls)
            self._open.append(index)
            self.calls.append(k)
            self.info.append({"input_shapes": describe(inputs), "begin": len(self.events),
                              "flops": self.meter.total(),
                              **dict(zip(("source", "source_stack"), call_source(module)))})
            self.events.append(2 * k)
            if self.ranges is not None:
                self.ranges[index] = node_range(str(index))
                self.ranges[index].__enter__()
        return hook

    def post(self, k: int) -> Callable:
        def hook(_module, _inputs, output) -> None:
            index = next(i for i in reversed(self._open) if self.calls[i] == k)
            self._open.remove(index)  # the latest open call of this module
            if self.ranges is not None:
                self.ranges.pop(index).__exit__(None, None, None)
            call = self.info[index]
            call.update(output_shapes=describe(output), out_bytes=tensor_bytes(output),
                        flops=self.meter.total() - call["flops"], end=len(self.events))
            self.events.append(2 * k + 1)
        return hook


def analyse_hooks(model: torch.nn.Module, leaves: Leaves, args: tuple,
                  kwargs: dict | None = None) -> HookAnalysis:
    """Run `model(*args, **kwargs)` once untimed with recording hooks on `leaves`.

    Example:
        >>> model = torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.ReLU())
        >>> found = analyse_hooks(model, [("0", model[0]), ("1", model[1])], (torch.zeros(3, 4),))
        >>> found.calls, found.events.tolist(), found.info[0]["flops"]
        ([0, 1], [0, 1, 2, 3], 48)
    """
    memory: contextlib.AbstractContextManager[dict[str, dict[str, int]]] = (
        allocator_events(cuda_device_of(args) is not None) if memory_wanted()
        else contextlib.nullcontext({}))
    try:
        with FlopMeter() as meter, memory as figures:
            recorder = _CallRecorder(meter, memory_wanted())
            with hooked(leaves, recorder.pre, recorder.post):
                model(*args, **(kwargs or {}))
    except Exception as error:
        shown = describe(args) + (f" and {describe(kwargs)}" if kwargs else "")
        raise PyfxprofError(f"{type(model).__name__} failed on inputs {shown}: "
                            f"{type(error).__name__}: {first_line(error)} — check the input "
                            "shapes") from None
    ended = [k for k, call in enumerate(recorder.info) if "end" in call]  # not: raised, caught
    for index, node_figures in figures.items():
        recorder.info[int(index)].update(node_figures)
    info = [{key: value for key, value in recorder.info[k].items() if key not in ("begin", "end")}
            for k in ended]
    return HookAnalysis([recorder.calls[k] for k in ended],
                        np.asarray(recorder.events, dtype=np.int64),
                        np.array([recorder.info[k]["begin"] for k in ended], dtype=np.int64),
                        np.array([recorder.info[k]["end"] for k in ended], dtype=np.int64),
                        info, meter.total())
