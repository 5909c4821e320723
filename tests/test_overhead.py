"""Tests of the overhead comparison: every method measured, report arithmetic and format."""

import numpy as np
import torch

from pyfxprof.tools.overhead import PLAIN, OverheadReport, compare_overhead


def test_every_method_is_measured_the_same_number_of_times():
    model = torch.nn.Sequential(*[torch.nn.ReLU() for _ in range(5)])
    report = compare_overhead(model, (torch.zeros(3),), runs=4, warmup=1, block=3)
    assert set(report.samples_ns) == {PLAIN, "pyfxprof codegen", "pyfxprof interpreter",
                                      "time.time interpreter", "torch.profiler"}
    assert all(len(v) == 4 for v in report.samples_ns.values())
    assert report.n_nodes == 5 and report.aten_ops_per_run > 0


def test_report_arithmetic_and_table():
    samples = {PLAIN: np.array([1000, 1000, 1000]), "pyfxprof codegen": np.array([1500] * 3),
               "time.time interpreter": np.array([51000] * 3)}
    report = OverheadReport("toy", 10, {k: v.astype(np.int64) for k, v in samples.items()})
    assert report.added_per_node_ns("pyfxprof codegen") == 50.0
    assert report.added_per_node_ns("time.time interpreter") == 5000.0
    assert report.inflation("time.time interpreter") == 51.0
    text = report.format()
    assert "100.0x" in text and "51.000x" in text and "50 ns" in text


class _KeywordsOnly(torch.nn.Module):
    """Its input comes through **kwargs, which a torch.fx graph cannot receive."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, **kwargs):
        return self.lin(kwargs["x"]).relu()


def test_a_dynamo_graph_is_compared_on_the_graphs_own_inputs():
    report = compare_overhead(_KeywordsOnly(), {"x": torch.ones(2, 3)}, runs=2, warmup=1,
                              capture_mode="dynamo")
    assert report.n_nodes == 2 and all(len(v) == 2 for v in report.samples_ns.values())
