"""Tests of the tutorial's time.time interpreter kept as the comparison baseline."""

import torch

from pyfxprof.tools.baseline import TimeTimeInterpreter


def test_records_every_node_and_run_like_the_tutorial():
    interp = TimeTimeInterpreter(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    for _ in range(3):
        interp.run(torch.zeros(1, 2))
    assert len(interp.total_runtime_sec) == 3
    assert [n.name for n in interp.runtimes_sec] == ["input_1", "_0", "_1", "output"]
    assert all(len(v) == 3 for v in interp.runtimes_sec.values())
    assert set(interp.mean_node_seconds()) == {"input_1", "_0", "_1", "output"}
