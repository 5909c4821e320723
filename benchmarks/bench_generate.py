"""Hugging Face ``generate`` under ``pyfxprof.Profiler``: per call signature (prefill, decode
steps) the capture rung, nodes, coverage and capture time, whether the tokens equal an
unprofiled run's, the wall time of ``generate`` with and without the Profiler, Dynamo's
guard check and the Profiler's own time per call, on a tiny GPT-2 and Llama built from
configs (random weights, no download); issue 34's figures: the wall time of Profiler blocks
interleaved with unprofiled generates, and their time to first token, as ratios.

Run: .venv/bin/python benchmarks/bench_generate.py [--tokens N] [--repeat R] [--prompt P]
     [--blocks B] [--models GPT-2,Llama]
(the first generate in the block pays the captures; the others, and later Profiler blocks
on the same model, reuse them)
"""

import argparse
import statistics
import time
import warnings

import torch
from machine import describe_machine

import pyfxprof
from pyfxprof.timing.native import logged_rows


def tiny_models() -> dict:
    """A 2-layer GPT-2 and Llama, hidden size 32, vocabulary 100, in eval mode."""
    import transformers
    gpt2 = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100,
                                   n_positions=64, bos_token_id=0, eos_token_id=0)
    llama = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=2, num_key_value_heads=1,
                                     vocab_size=100, max_position_embeddings=64,
                                     bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    return {"GPT-2": transformers.GPT2LMHeadModel(gpt2).eval(),
            "Llama": transformers.LlamaForCausalLM(llama).eval()}


def compare(name: str, model: torch.nn.Module, args: argparse.Namespace) -> None:
    ids = torch.randint(1, 100, (1, args.prompt), generator=torch.Generator().manual_seed(0))
    options = dict(max_new_tokens=args.tokens, min_new_tokens=args.tokens, do_sample=False,
                   pad_token_id=0)
    expected = model.generate(ids, **options)
    plain, profiled, same = [], [], True
    guard_checks = _time_guard_checks()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pyfxprof.Profiler(model, keep_profiles=None) as p:
            for _ in range(args.repeat):
                started = time.perf_counter()
                same &= torch.equal(model.generate(ids, **options), expected)
                profiled.append(time.perf_counter() - started)
    for _ in range(args.repeat):
        started = time.perf_counter()
        model.generate(ids, **options)
        plain.append(time.perf_counter() - started)
    second = _second_blocks(model, ids, options, args.repeat)
    interleaved = _interleaved_blocks(model, ids, options, args.blocks)
    print(f"\n{name}: same tokens as unprofiled: {same}; generate of {args.tokens} tokens, "
          f"median of {args.repeat - 1} after the first: unprofiled "
          f"{statistics.median(plain[1:]) * 1e3:.2f} ms, profiled "
          f"{statistics.median(profiled[1:]) * 1e3:.2f} ms (first profiled, with the "
          f"captures: {profiled[0]:.2f} s)")
    print(f"  a new Profiler block around one generate (captures from the cache), median of "
          f"{args.repeat}: {statistics.median(second) * 1e3:.2f} ms, "
          f"{statistics.median(second) / statistics.median(plain[1:]):.2f}x the unprofiled "
          f"generate")
    print(interleaved)
    groups = {group.index: group for group in p._groups.values()}
    for prof in p.profiles:
        group = groups[prof.meta["loop"]["call_group"]]
        print(f"  [{group.index}] {prof.meta['input_shapes'][:34]}...: capture "
              f"{prof.meta['capture_mode']} in {group.capture_ns / 1e9:.2f} s, "
              f"{prof.n_nodes} nodes, {prof.n_runs} calls, coverage {prof.meta['coverage']:.1%}")
    # the first call's own time includes the captures
    own_ns = logged_rows(p._log)[1:, 3].tolist()
    print(f"  Dynamo's guard check per call: median {statistics.median(guard_checks) / 1e3:.1f} µs "
          f"over {len(guard_checks)} calls; the Profiler's own time per call (binding, "
          f"grouping, guard check, bookkeeping): median {statistics.median(own_ns) / 1e3:.1f} µs")
    print(_binding_costs(model, ids, options))
    for warning in caught:
        print(f"  warning: {str(warning.message)[:300]}")


def _second_blocks(model: torch.nn.Module, ids: torch.Tensor, options: dict,
                   repeat: int) -> list[float]:
    """Seconds of `repeat` new ``with Profiler(model)`` blocks around one generate each,
    window delivery included (the model was captured in an earlier block)."""
    found = []
    for _ in range(repeat):
        started = time.perf_counter()
        with pyfxprof.Profiler(model):
            model.generate(ids, **options)
        found.append(time.perf_counter() - started)
    return found


def _interleaved_blocks(model: torch.nn.Module, ids: torch.Tensor, options: dict,
                        blocks: int) -> str:
    """Issue 34's figures: `blocks` unprofiled generates and `blocks` new ``with
    Profiler(model)`` blocks around one generate each, interleaved in the order ABBA... (so
    that each kind follows each kind as often: a generate right after a Profiler block runs
    on colder caches), captures from the cache, window delivery included: the ratio of their
    median wall times (and of their median CPU times, which a loaded machine's preemptions
    leave out), and of the Profiler's time to first token against the unprofiled generate's
    first forward (timed by hooks)."""
    found: dict[str, list] = {"plain": [], "profiled": []}
    for block in range(2 * blocks):
        kind = ("plain", "profiled", "profiled", "plain")[block % 4]
        found[kind].append(_timed_generate(model, ids, options, kind == "profiled"))
    (profiled, ttft), (plain, plain_ttft) = ([[run[:2] for run in found[kind]],
                                              [run[2] for run in found[kind]]]
                                             for kind in ("profiled", "plain"))
    wall, cpu = ([statistics.median(t[k] for t in runs) for runs in (profiled, plain)]
                 for k in (0, 1))
    first = statistics.median(ttft) / statistics.median(plain_ttft)
    quartile = (statistics.quantiles(ttft, n=4)[0] / statistics.quantiles(plain_ttft, n=4)[0]
                if blocks > 1 else first)  # (a loaded machine preempts many of the calls)
    pairs = " ".join(f"{b[0] / a[0]:.2f}" for a, b in zip(plain, profiled))
    return (f"  {blocks} unprofiled generates and {blocks} Profiler blocks interleaved: wall "
            f"{wall[0] * 1e3:.2f} ms profiled / {wall[1] * 1e3:.2f} ms unprofiled = "
            f"{wall[0] / wall[1]:.3f}x (pairs: {pairs}); CPU time {cpu[0] / cpu[1]:.3f}x; "
            f"time to first token {statistics.median(ttft) / 1e6:.3f} ms / "
            f"{statistics.median(plain_ttft) / 1e6:.3f} ms = {first:.3f} (lower quartiles: "
            f"{quartile:.3f})")


def _timed_generate(model: torch.nn.Module, ids: torch.Tensor, options: dict,
                    profiled: bool) -> tuple[float, float, float]:
    """(wall s, CPU s, time to first token ns) of one generate, unprofiled (its first
    forward timed by hooks) or in a new Profiler block (its TTFT the Profiler's)."""
    stamps: list[int] = []
    stamp = lambda *_: stamps.append(time.perf_counter_ns())  # noqa: E731
    handles = [] if profiled else [model.register_forward_pre_hook(stamp),
                                   model.register_forward_hook(stamp)]
    started = time.perf_counter(), time.thread_time()
    if profiled:
        with pyfxprof.Profiler(model) as p:
            model.generate(ids, **options)
    else:
        model.generate(ids, **options)
    wall, cpu = time.perf_counter() - started[0], time.thread_time() - started[1]
    for handle in handles:
        handle.remove()
    first = p.generation_latency()["ttft_ns"]["median"] if profiled else stamps[1] - stamps[0]
    return wall, cpu, first


def _binding_costs(model: torch.nn.Module, ids: torch.Tensor, options: dict) -> str:
    """The loop's binding of a decode call (a Binder's plan) against binding it through
    inspect (bind_inputs, what the loop did before), interleaved, 2000 of each."""
    import inspect

    from pyfxprof.capture.inputs import Binder, bind_inputs
    seen = []
    handle = model.register_forward_pre_hook(lambda _m, a, k: seen.append((a, k)),
                                             with_kwargs=True)
    try:
        model.generate(ids, **options)
    finally:
        handle.remove()
    (args, kwargs), signature = seen[-1], inspect.signature(model.forward)
    binder, planned, inspected = Binder(signature), [], []
    for _ in range(2000):
        started = time.perf_counter_ns()
        binder(args, kwargs)
        planned.append(time.perf_counter_ns() - started)
        started = time.perf_counter_ns()
        bind_inputs(signature, args, kwargs)
        inspected.append(time.perf_counter_ns() - started)
    return (f"  binding a decode call: median {statistics.median(planned) / 1e3:.1f} µs by the "
            f"loop's plan, {statistics.median(inspected) / 1e3:.1f} µs through inspect")


def _time_guard_checks() -> list[int]:
    """Times CallGroup.accepts (the guard check before each call of a captured group) from now
    on; the ns of each check go into the list returned."""
    from pyfxprof.loop.call_groups import CallGroup
    durations: list[int] = []
    accepts = getattr(CallGroup.accepts, "__wrapped__", CallGroup.accepts)

    def timed(group, bound):
        started = time.perf_counter_ns()
        accepted = accepts(group, bound)
        durations.append(time.perf_counter_ns() - started)
        return accepted
    timed.__wrapped__ = accepts
    CallGroup.accepts = timed
    return durations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=16, help="new tokens per generate")
    parser.add_argument("--repeat", type=int, default=4, help="generates per setting")
    parser.add_argument("--prompt", type=int, default=8, help="prompt tokens")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--blocks", type=int, default=15,
                        help="interleaved unprofiled generates and Profiler blocks")
    parser.add_argument("--models", default="GPT-2,Llama", help="comma-separated")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(describe_machine())
    for name, model in tiny_models().items():
        if name in args.models.split(","):
            compare(name, model, args)


if __name__ == "__main__":
    main()
