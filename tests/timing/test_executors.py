"""Tests of the executors behind one Protocol: codegen, interpreter and hooks driven the same way."""

import numpy as np
import pytest
import torch

from pyfxprof.capture.tracing import capture, fallback_capture, timed_nodes
from pyfxprof.errors import PyfxprofError
from pyfxprof.timing.executors import Executor, make_executor
from pyfxprof.capture.hook_analysis import analyse_hooks
from pyfxprof.timing.hook_timing import HooksExecutor
from tests.models import Net, net_input

PROTOCOL = [name for name in dir(Executor) if not name.startswith("_")] + ["__enter__", "__exit__"]


def _executors():
    model = Net().eval()
    gm = capture(model).graph_module
    n = len(timed_nodes(gm.graph))
    leaves = fallback_capture(model, (), []).leaves
    hooks = HooksExecutor(model, leaves, analyse_hooks(model, leaves, (net_input(),)))
    return [make_executor("codegen", gm, n), make_executor("interpreter", gm, n), hooks]


@pytest.mark.parametrize("index", [0, 1, 2])
def test_every_executor_is_driven_the_same_way(index):
    executor = _executors()[index]
    for name in PROTOCOL + ["mode", "calibration", "device", "calls_per_run"]:
        assert hasattr(executor, name), name
    with torch.inference_mode(), executor:
        executor.run((net_input(),))  # warm-up, forgotten by reset
        executor.reset(3)
        for _ in range(3):
            executor.run((net_input(),))
    timings = executor.timings()
    assert timings.intervals.shape == (3, executor.calls_per_run)
    assert (timings.intervals >= 0).all() and (timings.run_totals > 0).all()
    assert executor.device_samples() is None
    assert executor.timings().intervals.shape[0] == 0  # handed over once


def test_graph_executors_subtract_their_calibration_and_report_time_between_nodes():
    codegen, interpreter, _ = _executors()
    for executor in (codegen, interpreter):
        with torch.inference_mode(), executor:
            executor.run((net_input(),))
        timings = executor.timings()
        assert timings.between_nodes.shape == (1,) and timings.between_nodes[0] >= 0
        assert executor.mode in ("codegen", "interpreter")


def test_device_events_need_codegen():
    gm = capture(Net()).graph_module
    with pytest.raises(PyfxprofError, match="needs mode='codegen'"):
        make_executor("interpreter", gm, 14, device_events=True)


def test_reset_refuses_runs_that_cannot_fit():
    codegen = _executors()[0]
    with pytest.raises(PyfxprofError, match="use at most"):
        codegen.reset(10**13)
    assert np.isfinite(codegen.calibration.overhead_ns)
