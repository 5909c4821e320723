"""Nothing kept per profile() call: torch.fx's generated sources released (the per-call memory
figure is benchmarks/bench_leak.py's)."""

import gc
import linecache
import statistics
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


def test_memory_kept_per_call_is_under_1_kb_once_the_capture_cache_is_full():
    """The median growth per call over 16 calls after 50 traced ones: bounded state (the
    capture cache's 4 models, one replaced by each fresh model, and torch's own) keeps being
    replaced by objects allocated under tracing for about 50 calls (a few hundred KB); what
    stays per call after that is torch.fx's generated-code file names (~300 B)."""
    x = torch.randn(2, 8)
    tracemalloc.start()
    try:
        for _ in range(50):
            _profile_fresh_model(x)
        traced = []
        for _ in range(17):
            gc.collect()
            traced.append(tracemalloc.get_traced_memory()[0])
            _profile_fresh_model(x)
    finally:
        tracemalloc.stop()
    per_call = statistics.median(after - before for before, after in zip(traced, traced[1:]))
    assert per_call <= 1024, f"{per_call:.0f} B kept per profile() call"
