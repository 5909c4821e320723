"""A compiled profile's total is the compiled model's own call, in any order of calls in a
process: after an eager profile of the same model, after another compile of it, after
torch._dynamo.reset(). Compiles on CPU (needs a C++ compiler)."""

import cProfile
import pstats
import time

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.timing.compiled_executor import CompiledExecutor

transformers = pytest.importorskip("transformers")
INPUTS = {"input_ids": torch.arange(3, 19).reshape(1, 16)}


#: Inductor's on-disk caches in this module's own temporary directory, one thread.
pytestmark = pytest.mark.usefixtures("inductor_cache")


def tiny_gpt2() -> torch.nn.Module:
    """A GPT-2 small enough that the Python around its kernels is much of its call."""
    config = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=2, vocab_size=128,
                                     n_positions=64, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config).eval()


def _python_calls(call, times: int) -> float:
    """Python function calls (cProfile's count, deterministic) per call of `call`."""
    counter = cProfile.Profile()
    counter.enable()
    for _ in range(times):
        call()
    counter.disable()
    return pstats.Stats(counter).total_calls / times


def _profiled_calls(monkeypatch, compiled) -> float:
    """Python function calls per timed run of profile(compiled): what its total times."""
    counter, runs, run = cProfile.Profile(), [], CompiledExecutor.run

    def counted(self, *args, **kwargs):
        counter.enable()
        try:
            return run(self, *args, **kwargs)
        finally:
            counter.disable()
            runs.append(1)
    monkeypatch.setattr(CompiledExecutor, "run", counted)
    with torch.inference_mode():
        pyfxprof.profile(compiled, INPUTS, runs=5, warmup=0, progress=False)
    monkeypatch.undo()
    return pstats.Stats(counter).total_calls / len(runs)


def _orders(model):
    """Each order of calls the test checks, as (its name, what runs before the compile)."""
    def eager_profile():
        with torch.inference_mode():
            pyfxprof.profile(model, INPUTS, runs=3, warmup=1, progress=False)

    def other_compile():
        with torch.inference_mode():
            torch.compile(model)(**INPUTS)
    return [("fresh", lambda: None), ("after an eager profile", eager_profile),
            ("after another compile", other_compile),
            ("after torch._dynamo.reset()", torch._dynamo.reset)]


def test_the_profiled_run_is_the_users_compiled_call_in_any_order(monkeypatch):
    """Deterministic: each timed run makes the Python calls of the user's own compiled call
    (the same guards, graph and wrapper: about 344 for this model), plus a few of the
    executor's, whatever ran before in the process (a model compiled before costs the
    user's call 4 more: Dynamo's lookup among its wrappers)."""
    model = tiny_gpt2()
    extra = {}
    for name, before in _orders(model):
        before()
        compiled = torch.compile(model)
        with torch.inference_mode():
            compiled(**INPUTS)
            own = _python_calls(lambda: compiled(**INPUTS), 10)
        extra[name] = _profiled_calls(monkeypatch, compiled) - own
    assert all(0 <= calls <= 15 for calls in extra.values()), extra  # the executor's own


def _interleaved(compiled, rounds: int = 6) -> tuple[float, float]:
    """(median run total of profile(compiled), median of the compiled call timed alone),
    short profiles and plain calls taken in turn."""
    totals, calls = [], []
    with torch.inference_mode():
        for _ in range(rounds):
            prof = pyfxprof.profile(compiled, INPUTS, runs=10, warmup=2, progress=False)
            totals += prof.run_totals.tolist()
            for _ in range(10):
                begin = time.perf_counter_ns()
                compiled(**INPUTS)
                calls.append(time.perf_counter_ns() - begin)
    return float(np.median(totals)), float(np.median(calls))


@pytest.mark.timing(attempts=3)
def test_a_compiled_profiles_total_is_the_compiled_call_after_an_eager_profile():
    model = tiny_gpt2()
    _orders(model)[1][1]()  # an eager profile of the same model first
    compiled = torch.compile(model)
    with torch.inference_mode():
        compiled(**INPUTS)
    total, call = _interleaved(compiled)
    assert total == pytest.approx(call, rel=0.10), (total, call)
