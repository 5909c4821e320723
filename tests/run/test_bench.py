"""Tests of pyfxprof.bench and bench_grid (pyfxprof.run.bench): the timing against known
truths (a busy-wait of known length, torch.utils.benchmark in the same test), the adaptive
stop, warm-up, baselines, the per-node profile, CUDA events (fake runtime) and bad input."""


import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.data.validate import model_nodes
from pyfxprof import _C
from pyfxprof.errors import ArgumentError, PyfxprofError


@pytest.mark.timing
def test_a_busy_wait_of_known_length_is_measured_as_its_length():
    m = pyfxprof.bench(_C._spin_ns, 50_000, budget=1.0, target=0.02)
    # _spin_ns returns once 50 us have passed on the profiler clock: a floor, and a truth
    assert 50_000 <= m.call_median <= 50_000 * 1.03
    assert 50_000 <= m.median <= 50_000 * 1.03


def test_the_adaptive_run_stops_at_its_target():
    m = pyfxprof.bench(_C._spin_ns, 20_000, target=0.05, budget=5.0)
    assert m.stopped == "target" and m.precision <= 0.05
    assert m.blocks >= 10


def test_an_unreachable_target_stops_at_the_budget():
    m = pyfxprof.bench(torch.add, torch.ones(8), torch.ones(8), target=1e-9, budget=0.2)
    assert m.stopped == "budget" and m.precision > 1e-9
    assert m.samples.shape == (len(m.block_ns), m.block_size)
    assert m.samples.dtype == np.int64 and (m.samples >= 0).all()


class SlowStart:
    """Spins 200 us per call for its first `slow` calls, then 20 us."""

    def __init__(self, slow):
        self.calls, self.slow = 0, slow

    def __call__(self):
        self.calls += 1
        _C._spin_ns(200_000 if self.calls <= self.slow else 20_000)


def test_warmup_blocks_are_detected_and_left_out():
    m = pyfxprof.bench(SlowStart(slow=12), target=0.03, budget=3.0)  # about 4 slow blocks
    assert m.warmup_blocks >= 1
    assert m.median < 40_000  # the steady 20 us, not the slow start


def test_keyword_arguments_modules_and_threads():
    m = pyfxprof.bench(torch.sum, torch.ones(64, 64), dim=0, budget=0.1, threads=1)
    assert m.label == "torch.sum" and m.threads == 1 and m.device == "cpu"
    linear = pyfxprof.bench(torch.nn.Linear(16, 16), torch.ones(4, 16), budget=0.1)
    assert linear.label == "Linear" and linear.flops == 2 * 4 * 16 * 16
    assert linear.flops_per_second > 0
    assert linear.profile is not None and linear.profile.n_nodes >= 1


def test_rng_state_is_left_as_it_was():
    before = torch.random.get_rng_state()
    pyfxprof.bench(torch.randn, 16, budget=0.05)
    assert torch.equal(torch.random.get_rng_state(), before)


def test_an_fx_traceable_function_gets_its_per_node_profile():
    x = torch.ones(256)
    m = pyfxprof.bench(lambda a: torch.add(a, a).relu(), x, budget=0.1)
    assert m.profile is not None and model_nodes(m.profile.nodes).sum() == 2
    assert pyfxprof.bench(torch.add, x, x, budget=0.05).profile is None
    assert pyfxprof.bench(lambda a: a + 1, x, budget=0.05, profile=False).profile is None
    with pytest.raises(PyfxprofError, match="profile=True needs a module or a function"):
        pyfxprof.bench(torch.add, x, x, budget=0.05, profile=True)


def test_baseline_times_the_same_calls_with_python_timers():
    m = pyfxprof.bench(torch.add, torch.ones(8), torch.ones(8), baseline="perf_counter",
                       budget=0.2)
    blocks = len(m.block_ns)
    assert set(m.baseline) == {"perf_counter per call", "perf_counter per block",
                               "time.time per call", "time.time per block"}
    assert m.baseline["perf_counter per call"].shape == (blocks, m.block_size)
    assert m.baseline["time.time per block"].shape == (blocks, 1)
    assert all(v > 0 for v in m.baseline_medians().values())
    assert "perf_counter per block" in str(m)


def test_cuda_event_time_per_call_through_the_fake_runtime(fake_cudart):
    _C.cuda_load(str(fake_cudart), pool_size=4)
    try:
        m = pyfxprof.bench(_C._spin_ns, 20_000, device_events=True, budget=0.3, target=0.05)
    finally:
        _C.cuda_unload()
    assert m.device_samples.shape == m.samples.shape
    # the fake runtime stamps events with the host clock: each call holds its 20 us
    assert m.device_median >= 20_000
    assert "device (CUDA events)" in str(m)


def test_bench_grid_renders_one_table():
    grid = pyfxprof.bench_grid(torch.add, {"n": [1, 64, 4096], "dtype": [torch.float32,
                               torch.float64, torch.int32]}, budget=0.05,
                               setup=lambda n, dtype: (torch.ones(n, dtype=dtype),) * 2)
    assert len(grid.measurements) == 9
    lines = str(grid).splitlines()
    assert lines[1].split() == ["n", "dtype=float32", "dtype=float64", "dtype=int32"]
    assert [line.split()[0] for line in lines[2:5]] == ["1", "64", "4096"]


def test_bench_grid_without_setup_passes_the_cell_and_sets_threads():
    seen = []
    grid = pyfxprof.bench_grid(lambda n: seen.append(torch.get_num_threads()),
                               {"n": [1], "threads": [1]}, budget=0.02)
    assert set(seen) == {1} and grid.measurements[0].threads == 1


def raises(x):
    raise ValueError("bad shape\nmore")


@pytest.mark.parametrize("call, message", [
    (lambda: pyfxprof.bench(raises, torch.ones(1)),
     "raises raised on its inputs: ValueError: bad shape; fix the call or its inputs"),
    (lambda: pyfxprof.bench(_C._spin_ns, 5_000_000, budget=0.001),
     "budget=0.001 s is too small for one call of _spin_ns"),
    (lambda: pyfxprof.bench(3), "bench needs a callable"),
    (lambda: pyfxprof.bench(abs, 1, target=2), "target must be a fraction in (0, 1)"),
    (lambda: pyfxprof.bench(abs, 1, baseline="tsc"), "baseline must be one of"),
    (lambda: pyfxprof.bench_grid(abs, {"n": 5}),
     "grid parameter 'n' must be a non-empty list of values, got int 5"),
])
def test_bad_input_is_one_line(call, message):
    with pytest.raises(PyfxprofError) as error:
        call()
    assert message in str(error.value) and "\n" not in str(error.value)


def test_grid_cells_take_turns_so_drift_reaches_them_alike():
    order = []
    grid = pyfxprof.bench_grid(lambda name: order.append(name) or _C._spin_ns(20_000),
                               {"name": ["a", "b"]}, budget=0.3, target=1e-9, profile=False)
    # both cells ran out of budget, their rounds alternating (one after the other, the
    # calls would switch between a and b 5 times: checks, rounds, FLOP counts)
    assert [m.stopped for m in grid.measurements] == ["budget", "budget"]
    switches = sum(x != y for x, y in zip(order, order[1:]))
    assert switches >= 10


def test_unknown_options_are_one_line():
    with pytest.raises(ArgumentError, match=r"unknown bench options \['budgett'\]"):
        pyfxprof.bench_grid(abs, {"x": [1]}, budgett=1)
