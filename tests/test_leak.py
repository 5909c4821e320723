"""Nothing kept per profile() call: torch.fx's generated sources released, memory flat (bounded
run of benchmarks/bench_leak.py)."""

import gc
import linecache
import tracemalloc

import torch
import torch.fx.graph_module

import pyfxprof


def _profile_fresh_model(x):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    pyfxprof.profile(model, (x,), runs=3, warmup=1, progress=False)


def test_generated_sources_are_released():
    x = torch.randn(2, 8)
    _profile_fresh_model(x)
    before = (len(torch.fx.graph_module._loader.eval_cache), len(linecache.cache))
    for _ in range(5):
        _profile_fresh_model(x)
    assert (len(torch.fx.graph_module._loader.eval_cache), len(linecache.cache)) == before


def test_memory_kept_per_call_is_under_a_kilobyte():
    """Before the release: ~5.9 KB per call (three graphs' sources); after: ~0.5 KB. The slope
    between the 10th and the 40th traced call leaves one-time allocations out."""
    x = torch.randn(2, 8)
    for _ in range(10):
        _profile_fresh_model(x)
    tracemalloc.start()
    try:
        traced = []
        for call in range(40):
            _profile_fresh_model(x)
            if call in (9, 39):
                gc.collect()
                traced.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    kept = (traced[1] - traced[0]) / 30
    assert kept <= 1024, f"{kept:.0f} bytes kept per profile() call"
