"""Profiles with a `(Python outside the graph)` row for tests, built without a model."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pyfxprof.data.outside_graph import with_outside_graph
from pyfxprof.data.profile import Profile

#: The breakdown the toy profile carries (profiled ns: their shares are 60%, 30%, 10%).
FUNCTIONS = [
    {"function": "Net.forward", "origin": "model", "file_line": "net.py:10", "calls": 1.0,
     "self_ns": 6000.0},
    {"function": "Module._call_impl", "origin": "torch", "file_line": "torch/nn/modules/module.py:1",
     "calls": 4.0, "self_ns": 3000.0},
    {"function": "torch._C._get_tracing_state", "origin": "torch (C)", "file_line": "",
     "calls": 4.0, "self_ns": 1000.0},
]


def graph_profile(runs: int = 10) -> Profile:
    """Two nodes (600 and 300 ns) in a graph run of 1000 ns, an extra int column."""
    nodes = pd.DataFrame({"index": [0, 1], "name": ["mm", "relu"],
                          "op": ["call_function"] * 2, "target": ["torch.mm", "torch.relu"],
                          "module_path": ["", ""], "module_type": ["Net", "Net"],
                          "module_stack": [(), ()], "flops": np.array([10, 0], np.int64),
                          "source": ["a.py:1", "a.py:2"]})
    samples = np.tile(np.array([600, 300], np.int64), (runs, 1))
    return Profile(nodes, samples, np.full(runs, 1000, np.int64),
                   {"model": "Net", "coverage": 0.9, "runs": runs})


def outside_profile(runs: int = 10, outside_ns: int = 3000) -> Profile:
    """graph_profile whose runs were made inside user's calls `outside_ns` longer than its
    rows' 900 ns (±50 ns; its runs' 1000 ns hold 100 ns between the nodes, which the row
    takes): the calls made around the runs spend 200 ns less than the plain calls timed
    apart (the Python the graph replaced), which the row gets back as its level."""
    calls = 900 + outside_ns + np.tile(np.array([-50, 50]), runs // 2 + 1)[:runs]
    return with_outside_graph(graph_profile(runs), calls[::-1].tolist(), FUNCTIONS,
                              around_ns=(calls - 200).tolist())
