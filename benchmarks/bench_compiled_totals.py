"""Compiled totals in any order of calls in a process (issue 34): for tiny GPT-2 and Qwen2
(2 layers, hidden 64, 1x16 token ids), compiled by torch.compile in each order the issue names
(fresh; after an eager profile of the same model; after another compile of it; after
torch._dynamo.reset()), the median run total of `pyfxprof.profile(compiled, ...)` against the
median of the compiled model's own call, both taken in turn in the same process under
inference_mode (the first profile before the compiled model's first call, as in the issue).
The done-when: total within 10% of the call in every order.

Run: PYTHONPATH=. python benchmarks/bench_compiled_totals.py [--rounds 6] [--only gpt2]
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
    return {"gpt2": gpt2, "qwen2": qwen2}


def orders(model) -> list:
    """(name, what runs before the compile) in the order they run in the process."""
    def eager_profile():  # as a user makes it (profile() sets its own modes)
        pyfxprof.profile(model, INPUTS, runs=10, warmup=2, progress=False)

    def other_compile():
        with torch.inference_mode():
            torch.compile(model)(**INPUTS)
    return [("fresh", lambda: None), ("after an eager profile", eager_profile),
            ("after another compile", other_compile),
            ("after torch._dynamo.reset()", torch._dynamo.reset)]


def interleaved(compiled, rounds: int) -> tuple[list[list[int]], list[list[int]]]:
    """Per round, the run totals of a short profile of `compiled` and 10 plain calls after
    it; the first profile comes before the compiled model's first call (the issue's
    sequence), which is then made untimed."""
    totals, calls = [], []
    with torch.inference_mode():
        for done in range(rounds):
            prof = pyfxprof.profile(compiled, INPUTS, runs=10, warmup=2, progress=False)
            totals.append(prof.run_totals.tolist())
            if not done:
                compiled(**INPUTS)  # the user's own compile
            calls.append([])
            for _ in range(10):
                begin = time.perf_counter_ns()
                compiled(**INPUTS)
                calls[-1].append(time.perf_counter_ns() - begin)
    return totals, calls


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
        model = build()
        for order, before in orders(model):
            started = time.perf_counter()
            before()
            compiled = torch.compile(model)
            total, call, ratio = compared(*interleaved(compiled, args.rounds))
            ok = abs(total - call) <= 0.10 * call
            met &= ok
            print(f"{name} {order}: profile total {total / 1e3:.0f} µs · compiled call "
                  f"{call / 1e3:.0f} µs · total/call {total / call:.3f} "
                  f"({'within' if ok else 'NOT within'} 10%; per round {ratio:.3f}) · "
                  f"{time.perf_counter() - started:.0f} s")
    print("all orders within 10%" if met else "some order is NOT within 10%")


if __name__ == "__main__":
    main()
