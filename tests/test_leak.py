"""Nothing kept per profile() call: torch.fx's generated sources released (the per-call memory
figure is benchmarks/bench_leak.py's)."""

import linecache

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
