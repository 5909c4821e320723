"""A run's metadata: the one meta builder of pyfxprof.profile() and the Profiler loop, and the
environment a profile was taken in (versions, CPU, threads, clock, time stamp)."""

from __future__ import annotations

import datetime
import os
import platform
import sys
from typing import TYPE_CHECKING, Any

import torch

from .. import __version__
from ..capture.shape_run import describe
from ..capture.exported import exported_name, is_exported
from ..data.rungs import DYNAMO
from ..capture.model_state import autograd_mode, numeric_mode
from ..capture.placement import device_of
from ..timing.device_events import event_record_cost_ns
from ..timing.native import _C
from .distributed import rank_meta
from .first_touch import PAGE_BYTES
from .peaks_cache import cached_peaks

if TYPE_CHECKING:
    from ..capture.ladder import Prepared
    from ..capture.tracing import Capture
    from ..timing.durations import RunTimings
    from .arguments import Arguments
    from .timed_runs import Measured
    from .wall_clock import StepClock


def run_meta(model: torch.nn.Module, name: str | None, *, device: str, device_events: bool,
             executor: Any, captured: Capture, timings: RunTimings, warmup: int, mode: str,
             grad: bool | None, input_shapes: str, dropped_records: int, **extra: Any) -> dict:
    """A Profile's `meta`: what the run did (`extra` adds the caller's own keys), the
    executor's calibration, the fusion report of a fused model and the environment. An
    exported program (capture/exported.py) is named after the model it was exported from
    and has ``exported`` true, ``training`` and ``given_training`` None (it has no modes).

    Example:
        >>> from types import SimpleNamespace as Fake
        >>> import numpy as np
        >>> executor = Fake(calibration=Fake(as_meta=lambda: {"overhead_ns": 20.0}))
        >>> timings = Fake(intervals=np.zeros((3, 1)), incomplete_runs=1)
        >>> meta = run_meta(torch.nn.ReLU(), None, device="cpu", device_events=False,
        ...     executor=executor, captured=Fake(mode="fx", notes=[]),
        ...     timings=timings, warmup=2, mode="codegen", grad=False, input_shapes="[1]",
        ...     dropped_records=0, flops=7)
        >>> meta["model"], meta["runs"], meta["incomplete_runs"], meta["flops"], meta["overhead_ns"]
        ('ReLU', 3, 1, 7, 20.0)
    """
    meta = {"model": name or model_name(model), "device": device,
            "device_events": _C.cuda_status()["library"] if device_events else None,
            "device_event_cost_ns": event_record_cost_ns() if device_events else None,
            "runs": int(timings.intervals.shape[0]), "warmup": warmup, "mode": mode,
            "capture_mode": captured.mode, "capture_notes": captured.notes, "grad": grad,
            "input_shapes": input_shapes, "incomplete_runs": timings.incomplete_runs,
            "dropped_records": dropped_records}
    meta.update(extra)
    if is_exported(model):
        meta.update(training=None, given_training=None, exported=True)
    meta.update(graphs_meta(captured))
    meta.update(executor.calibration.as_meta())
    meta.update(fusion_meta(model))
    meta.update(environment_meta())
    peaks = cached_peaks(device, str(meta["cpu"]))  # read, never measured here (docs/roofline.md)
    if peaks is not None:
        meta["machine_peaks"] = peaks
    return meta


def modes_meta(model: torch.nn.Module, given_training: bool, example_inputs: Any) -> dict:
    """The modes profile()'s model ran in (``training`` False: profile() runs it in eval
    mode; ``given_training``: the caller's flag; ``autograd``: see model_state.autograd_mode;
    the numeric mode: model_state.numeric_mode). Called inside profile()'s eval and grad
    contexts."""
    return {"training": False, "given_training": given_training, "autograd": autograd_mode(),
            **numeric_mode(model, example_inputs)}  # the caller's autocast: profile() sets none


def profile_meta(given: Arguments, prepared: Prepared, measured: Measured, modes: dict,
                 clock: StepClock) -> dict:
    """profile()'s run_meta from what it was given (checked and placed), prepared and
    measured, the `modes` it ran in (modes_meta) and its steps' wall time (`clock`)."""
    executor, inputs = measured.executor, given.example_inputs
    shown = (describe(inputs) if isinstance(inputs, dict)
             or prepared.captured.graph_inputs is not None  # a dynamo graph's args add params
             else describe(prepared.args))
    return run_meta(given.model, given.name, device=device_of(given.model, prepared.args),
                    executor=executor, captured=prepared.captured, timings=measured.timings,
                    mode=executor.mode, flops=prepared.flops, input_shapes=shown, **modes,
                    device_events=bool(given.timing.device_events), warmup=measured.warmup,
                    warmup_auto=given.warmup == "auto",
                    grad=given.grad, dropped_records=measured.dropped_records,
                    warmup_totals_ns=measured.warmup_totals, wall_s=clock.seconds,
                    page_bytes=PAGE_BYTES, **(measured.counters or {}),
                    **prepared.memory_meta)


def model_name(model: torch.nn.Module) -> str:
    """The model's type name; for an exported program, the exported model's.

    Example:
        >>> model_name(torch.nn.ReLU())
        'ReLU'
    """
    return exported_name(model) if is_exported(model) else type(model).__name__


def graphs_meta(captured: Capture) -> dict:
    """``graphs`` (how many) and ``graph_breaks`` (Dynamo's reasons, first lines) of a call
    Dynamo split (a dynamo capture with a DynamoFrame and no graph of its own); nothing
    otherwise.

    Example:
        >>> from types import SimpleNamespace as Fake
        >>> split = Fake(graphs=[1, 2], breaks=["why"])
        >>> graphs_meta(Fake(mode="dynamo", graph_module=None, frame=split))
        {'graphs': 2, 'graph_breaks': ['why']}
    """
    frame = getattr(captured, "frame", None)
    if captured.mode != DYNAMO or frame is None or captured.graph_module is not None:
        return {}
    return {"graphs": len(frame.graphs), "graph_breaks": list(frame.breaks)}


def fusion_meta(model: torch.nn.Module) -> dict:
    """`fused_pairs` for models made by pyfxprof.fuse_conv_bn, so diffs show BNs as fused."""
    report = getattr(model, "fusion_report", None)
    return {"fused_pairs": [list(pair) for pair in report.fused]} if report is not None else {}


def cpu_name() -> str:
    """The CPU model name, from /proc/cpuinfo where available."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment_meta() -> dict:
    """Versions, CPU, logical cores, torch threads, clock, a UTC time stamp and, inside a
    distributed job, ``distributed`` (rank, world size; see distributed.rank_meta).

    Example:
        >>> sorted(environment_meta())[:4]
        ['argv', 'clock', 'cores', 'cpu']
    """
    clock = _C.clock_info()
    return {
        "versions": {"pyfxprof": __version__, "torch": torch.__version__,
                     "python": platform.python_version(), "numpy": _numpy_version()},
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "clock": {"name": clock["name"], "resolution_ns": clock["resolution_ns"],
                  "read_cost_ns": clock["read_cost_ns"], "tsc_hz": clock["tsc_hz"]},
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "argv": list(sys.argv[1:]) if sys.argv and "pyfxprof" in str(sys.argv[0]) else [],
        **rank_meta(),
    }


def _numpy_version() -> str:
    import numpy
    return numpy.__version__
