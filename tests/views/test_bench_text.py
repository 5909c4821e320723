"""Tests of pyfxprof.views.bench_text: str, repr and HTML of Measurements and BenchGrid grids."""

import numpy as np

from pyfxprof.data.bench_compare import BenchGrid
from pyfxprof.data.measurement import Measurement


def measurement(**options):
    return Measurement("torch.add", np.full((20, 4), 1000), np.full(20, 4800), overhead_ns=20.0,
                       threads=2, **options)


def test_str_gives_median_interval_calls_and_why_it_stopped():
    text = str(measurement(warmup_blocks=2))
    lines = text.splitlines()
    assert lines[0].startswith("torch.add: median 1.20 µs per call (95% interval 1.20 µs")
    assert "the calls alone: median 1.00 µs" in lines[1]
    assert "72 calls in 18 blocks of 4 (2 warm-up blocks left out); stopped at the target" in text
    assert "833k calls/s · 2 threads · cpu · native timer, 20 ns timer cost" in text


def test_str_says_when_the_budget_ran_out_and_shows_flops_and_device():
    text = str(measurement(stopped="budget", budget_s=0.5, flops=2400,
                           device_samples=np.full((20, 4), 700)))
    assert "budget of 0.5 s spent before the target ±1.00%" in text
    assert "2.00 GFLOP/s" in text
    assert "device (CUDA events): median 700 ns per call" in text


def test_baselines_side_by_side_with_their_difference():
    text = str(measurement(baseline={"perf_counter per call": np.full((20, 4), 1500),
                                     "time.time per block": np.full((20, 1), 1100)}))
    assert "pyfxprof native" in text
    assert "  perf_counter per call    1.50 µs  +300 ns (+25.0%)" in text
    assert "time.time per block      1.10 µs  -100 ns (-8.3%)" in text


def test_repr_is_one_line_and_html_a_table():
    m = measurement()
    assert repr(m) == "<Measurement torch.add: median 1.20 µs ±0.00% over 80 calls>"
    page = m._repr_html_()
    assert page.startswith('<div class="pyfxprof bench"><b>torch.add</b><table>')
    assert "<th>median</th><td>1.20 µs per call</td>" in page


def grid():
    cells = [(1, "float32", 1000), (1, "float64", 1000), (1024, "float32", 2000),
             (1024, "float64", 4000)]
    return BenchGrid([Measurement("add", np.ones((8, 1)), np.full(8, t) + np.arange(8) % 2,
                                params={"n": n, "dtype": d}) for n, d, t in cells])


def test_grid_text_rows_columns_and_marks():
    lines = str(grid()).splitlines()
    assert lines[0] == "median per call (pyfxprof.bench)"
    assert lines[1].split() == ["n", "dtype=float32", "dtype=float64"]
    assert lines[2].split() == ["1", "1.00", "µs", "1.00", "µs"]
    assert lines[3].split() == ["1024", "2.00", "µs", "4.00", "µs", "*"]
    assert lines[4].startswith("*: differs from the cell to its left")


def test_grid_names_cells_short_of_their_target():
    g = grid()
    g.measurements[3].stopped = "budget"
    assert str(g).splitlines()[-1].startswith("budget spent before the target in: 1024 float64")


def test_grid_html():
    page = grid()._repr_html_()
    assert "<th>dtype=float64</th>" in page and "<td>4.00 µs *</td>" in page
