"""Tests of pyfxprof.data.bench_compare: the grid layout of Measurements and its marks."""

import numpy as np

from pyfxprof.data.bench_compare import BenchGrid, value_text
from pyfxprof.data.measurement import Measurement


def cell(per_call, label="add", **params):
    return Measurement(label, np.ones((8, 1)), np.full(8, per_call) + np.arange(8) % 2,
                       params=params)


def test_rows_by_first_parameters_columns_by_last():
    ms = [cell(t, n=n, dtype=d) for n, d, t in
          [(1, "torch.float32", 100), (1, "torch.float64", 100), (1024, "torch.float32", 300),
           (1024, "torch.float64", 600)]]
    grid = BenchGrid(ms)
    assert grid.row_names == ["n"] and grid.column_name == "dtype"
    assert grid.row_keys == [("1",), ("1024",)]
    assert grid.column_keys == ["float32", "float64"]
    assert grid.cell(("1024",), "float64") is ms[3]
    assert [grid.marked(m) for m in ms] == [False, False, False, True]


def test_labels_become_rows_when_they_differ_or_without_parameters():
    grid = BenchGrid([cell(100, "add"), cell(200, "mul")])
    assert grid.row_names == ["label"] and grid.column_keys == ["median"]
    assert grid.row_keys == [("add",), ("mul",)]
    assert not grid.marked(grid.measurements[1])  # first column: no left neighbour


def test_an_empty_left_neighbour_marks_nothing():
    grid = BenchGrid([cell(100, n=1, k=1), cell(900, n=2, k=2)])
    assert grid.cell(("1",), "2") is None
    assert not grid.marked(grid.measurements[1])


def test_value_text_drops_the_torch_prefix():
    assert value_text("torch.int32") == "int32" and value_text(3) == "3"
