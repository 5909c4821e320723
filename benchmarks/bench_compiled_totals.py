"""Compiled totals in any order of calls in a process (issues 34 and 46): for tiny GPT-2 and
Qwen2 (2 layers, hidden 64, 1x16 token ids) and a tiny ConvNeXt (4 stages of depth 1, widths
16-128, 1x3x64x64), compiled by torch.compile in each order the issues name (fresh; after an
eager profile of the same model; after another compile of it; after torch._dynamo.reset()),
the median run total of `pyfxprof.profile(compiled, ...)` (its rows: kernels, the time between
graphs and `(outside kernels)`, summed per run) against the median of the compiled model's own
call, both taken in turn in the same process under inference_mode (the first profile before the
compiled model's first call, as in the issue). Also the profile's own figures (meta["call"]):
whether each run was made inside the user's compiled call, and ``level_ns``, the user's plain
compiled call beyond the calls made around the runs (the user's compiled artifact against the
one pyfxprof instruments, plus the wrapping's cost). Then the done-when's figure: one
100-run profile against the compiled call timed plainly in blocks of 5 calls taking turns
with its runs (beside_runs), within 10% in every order.

Run: PYTHONPATH=. python benchmarks/bench_compiled_totals.py [--rounds 6] [--only gpt2 convnext]
(Inductor's caches go to a fresh temporary directory; one thread.)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="pyfxprof-totals-"))
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import pyfxprof  # noqa: E402

INPUTS = {"input_ids": torch.arange(3, 19).reshape(1, 16)}


def models() -> dict:
    """name -> a function building the model (random weights, seeded, eval mode)."""
    import transformers

    def gpt2():
        torch.manual_seed(0)
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_embd=64, n_layer=2, n_head=2, vocab_size=128, n_positions=64, bos_token_id=1,
            eos_token_id=2)).eval()

    def qwen2():
        torch.manual_seed(0)
        return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(
            hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, vocab_size=128, max_position_embeddings=64)).eval()
    def convnext():
        torch.manual_seed(0)
        return transformers.ConvNextModel(transformers.ConvNextConfig(
            num_channels=3, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
            image_size=64)).eval()
    return {"gpt2": gpt2, "qwen2": qwen2, "convnext": convnext}


#: Each model's inputs (token ids; an image for the ConvNeXt).
MODEL_INPUTS = {"gpt2": INPUTS, "qwen2": INPUTS,
                "convnext": {"pixel_values": torch.randn(1, 3, 64, 64,
                                                         generator=torch.Generator().manual_seed(0))}}


def orders(model, inputs: dict) -> list:
    """(name, what runs before the compile) in the order they run in the process."""
    def eager_profile():  # as a user makes it (profile() sets its own modes)
        pyfxprof.profile(model, inputs, runs=10, warmup=2, progress=False)

    def other_compile():
        with torch.inference_mode():
            torch.compile(model)(**inputs)
    return [("fresh", lambda: None), ("after an eager profile", eager_profile),
            ("after another compile", other_compile),
            ("after torch._dynamo.reset()", torch._dynamo.reset)]


def interleaved(compiled, inputs: dict, rounds: int) -> tuple[list, list, list]:
    """Per round, the run totals of a short profile of `compiled`, 10 plain calls after it and
    the profile's meta["call"]; the first profile comes before the compiled model's first call
    (the issue's sequence), which is then made untimed."""
    totals, calls, metas = [], [], []
    with torch.inference_mode():
        for done in range(rounds):
            prof = pyfxprof.profile(compiled, inputs, runs=10, warmup=2, progress=False)
            totals.append(prof.run_totals.tolist())
            metas.append(prof.meta.get("call") or {})
            if not done:
                compiled(**inputs)  # the user's own compile
            calls.append([])
            for _ in range(10):
                begin = time.perf_counter_ns()
                compiled(**inputs)
                calls[-1].append(time.perf_counter_ns() - begin)
    return totals, calls, metas


def beside_runs(compiled, inputs: dict, runs: int = 100, block: int = 5) -> tuple[float, float]:
    """(median run total of one profile(compiled) of `runs` runs, median of the compiled call
    timed plainly in blocks of `block` calls before every `block`-th run): the truth and the
    runs take turns every few milliseconds, so they share the machine's phases (what
    tests/test_compiled_totals.py checks)."""
    from pyfxprof.run.user_call import AroundRuns
    plain, around_run, seen = [], AroundRuns.run, [0]

    def run(self, args):
        if seen[0] % block == 0:
            for _ in range(block):
                begin = time.perf_counter_ns()
                compiled(**inputs)
                plain.append(time.perf_counter_ns() - begin)
        seen[0] += 1
        return around_run(self, args)
    AroundRuns.run = run
    try:
        with torch.inference_mode():
            prof = pyfxprof.profile(compiled, inputs, runs=runs, warmup=block, progress=False)
    finally:
        AroundRuns.run = around_run
    return float(np.median(prof.run_totals)), float(np.median(plain[-runs:]))


def call_figures(metas: list) -> str:
    """The profiles' own word on the call: runs made inside it in how many rounds, the median
    level (the user's plain compiled call beyond the calls around the runs) and the median
    rows_share (the rows' medians summed against the plain call timed inside profile())."""
    inside = sum(bool(meta.get("per_run")) for meta in metas)
    levels = [meta["level_ns"] for meta in metas if meta.get("level_ns") is not None]
    level = f"{np.median(levels) / 1e3:+.0f} µs" if levels else "none"
    shares = [meta["rows_share"] for meta in metas if meta.get("rows_share") is not None]
    share = f"{np.median(shares):.3f}" if shares else "none"
    return (f"runs inside your call in {inside} of {len(metas)} profiles, level {level}, "
            f"rows / the profile's own plain-call median {share}")


def compared(totals: list[list[int]], calls: list[list[int]]) -> tuple[float, float, float]:
    """(median total, median call, median over rounds of each round's total/call median
    ratio: adjacent in time, so the machine's drift between rounds cancels)."""
    ratios = [np.median(t) / np.median(c) for t, c in zip(totals, calls)]
    return (float(np.median(np.concatenate(totals))), float(np.median(np.concatenate(calls))),
            float(np.median(ratios)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"load {open('/proc/loadavg').read().split()[:3]} · torch {torch.__version__} · "
          f"1 thread · pid {os.getpid()}")
    met = True
    for name, build in models().items():
        if args.only and name not in args.only:
            continue
        model, inputs = build(), MODEL_INPUTS[name]
        for order, before in orders(model, inputs):
            started = time.perf_counter()
            before()
            compiled = torch.compile(model)
            totals, calls, metas = interleaved(compiled, inputs, args.rounds)
            total, call, ratio = compared(totals, calls)
            beside, truth = beside_runs(compiled, inputs)
            ok = abs(beside - truth) <= 0.10 * truth
            met &= ok
            print(f"{name} {order}: profile total {total / 1e3:.0f} µs · compiled call "
                  f"{call / 1e3:.0f} µs · total/call {total / call:.3f} (per round "
                  f"{ratio:.3f}) · in blocks beside the runs {beside / 1e3:.0f} against "
                  f"{truth / 1e3:.0f} µs: {beside / truth:.3f} "
                  f"({'within' if ok else 'NOT within'} 10%) · {call_figures(metas)} · "
                  f"{time.perf_counter() - started:.0f} s · load "
                  f"{open('/proc/loadavg').read().split()[0]}", flush=True)
    print("all orders within 10%" if met else "some order is NOT within 10%")


if __name__ == "__main__":
    main()
