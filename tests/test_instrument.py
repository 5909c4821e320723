"""Tests of the codegen pass: n+1 marks, outputs unchanged, the original GraphModule untouched."""

import numpy as np
import torch

from pyfxprof import _C
from pyfxprof.capture.tracing import capture, timed_nodes
from pyfxprof.timing.instrument import instrument
from pyfxprof.timing.recorder import RECORDER
from tests.models import Net, net_input


def test_instrumented_module_gives_the_same_outputs_and_n_plus_1_marks():
    model = Net().eval()
    gm = capture(model).graph_module
    n = len(timed_nodes(gm.graph))
    first = RECORDER.allocate(n + 1)
    instrumented = instrument(gm, first)
    x = net_input()
    with torch.inference_mode():
        torch.testing.assert_close(instrumented(x), model(x))
    records = RECORDER.collect(first, n + 1)
    np.testing.assert_array_equal(records.id, first + np.arange(n + 1))
    assert np.all(records.kind == _C.KIND_MARK)


def test_original_graph_module_is_not_changed():
    gm = capture(Net()).graph_module
    code_before = gm.code
    instrument(gm, RECORDER.allocate(100))
    assert gm.code == code_before and "mark" not in gm.code


def test_instrumented_code_calls_mark_between_nodes():
    gm = capture(Net()).graph_module
    n = len(timed_nodes(gm.graph))
    code = instrument(gm, 1000).code
    assert code.count("mark(") == n + 1
    assert "mark(1000)" in code and f"mark({1000 + n})" in code
