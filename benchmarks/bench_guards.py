"""Where Dynamo's guard check of a decode step goes (the Profiler checks it before every call
of a dynamo call group): the guards of a tiny GPT-2 and Llama's decode-step capture by kind,
and the warm time of the whole check and of the parts of its tree (the call's arguments and
cache, the model's config, its module tree, the globals its code read), each part checked
alone through a clone of the tree holding it and the root's own guards (whose time is
taken out). Warm: in the Profiler's loop the check after a decode step runs on cold
caches and costs more (bench_generate.py times it there).

With --loop: the Profiler loop's cost per recorded call beside torch.compile's own (its
guard check and frame), measured side by side in one run, interleaved block by block: a
plain call, a torch.compile(backend=<the graph as it is>) call, and a recorded call of the
loop (Dynamo's guards checked by the loop, Dynamo's code, the instrumented graph), on
a small MLP and on a tiny GPT-2 decode step.

Run: .venv/bin/python benchmarks/bench_guards.py [--checks N] [--loop --blocks B --calls C]
"""

import argparse
import collections
import statistics
import time
import warnings

import torch
from bench_generate import tiny_models
from machine import describe_machine

import pyfxprof
from pyfxprof.loop import call_groups

#: The parts of the tree: the sources at which each one is cut off.
PARTS = {
    "call's arguments and cache": lambda source: source in ("L['args']", "L['kwargs']"),
    "model's config": lambda source: source == "L['target'].__self__.config",
    "model's module tree": lambda source: source == "L['target'].__self__._modules",
    "globals its code read": lambda source: source == "G",
}


def _children(manager) -> list:
    from torch._C._dynamo.guards import DictGuardManager
    if isinstance(manager, DictGuardManager):
        return [m for pair in manager.get_key_value_managers().values() for m in pair if m]
    return list(manager.get_child_managers())


def _walk(manager, ancestors: tuple = ()):
    """(manager, sources of its ancestors) for every manager of the tree."""
    yield manager, ancestors
    for child in _children(manager):
        yield from _walk(child, (*ancestors, manager.get_source()))


def _part(root, cut) -> tuple:
    """(clone of the tree holding the part and the root's own guards, number of guards)."""
    keep, guards = {root.get_source()}, 0
    for manager, ancestors in _walk(root):
        if cut(manager.get_source()):
            keep.update(ancestors)
            for inner, _ in _walk(manager):
                keep.add(inner.get_source())
                guards += len(inner.get_leaf_guards())
    return root.clone_manager(lambda node: node.get_source() in keep), guards


def _decode_call(model: torch.nn.Module, tokens: int) -> tuple:
    """(the decode group's guard manager, the frame locals of its last call)."""
    seen = []
    accepts = call_groups.CallGroup.accepts

    def recording(group, bound):
        seen.append((group, bound))
        return accepts(group, bound)

    ids = torch.randint(1, 100, (1, 8), generator=torch.Generator().manual_seed(0))
    call_groups.CallGroup.accepts = recording
    try:
        with warnings.catch_warnings(), pyfxprof.Profiler(model):
            warnings.simplefilter("ignore")
            model.generate(ids, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                           pad_token_id=0)
    finally:
        call_groups.CallGroup.accepts = accepts
    group, bound = seen[-1]
    frame = group.capture.frame
    return frame.guards, {"target": frame.target, "args": bound.args, "kwargs": bound.kwargs}


def _median_us(root, frame_locals: dict, checks: int) -> float:
    found = []
    for _ in range(checks):
        started = time.perf_counter_ns()
        if not root.check(frame_locals):
            raise RuntimeError("the guards refuse the call they were timed on")
        found.append(time.perf_counter_ns() - started)
    return statistics.median(found) / 1e3


def report(name: str, model: torch.nn.Module, checks: int) -> None:
    guards, frame_locals = _decode_call(model, tokens=4)
    root = guards.root
    kinds = collections.Counter(type(guard).__name__ for manager, _ in _walk(root)
                                for guard in manager.get_leaf_guards())
    with torch.no_grad():  # generate's autograd mode, which the guards check
        whole, alone = _median_us(root, frame_locals, checks), {}
        base = _median_us(root.clone_manager(lambda node: node.get_source() == root.get_source()),
                          frame_locals, checks)
        for part, cut in PARTS.items():
            clone, count = _part(root, cut)
            alone[part] = (count, _median_us(clone, frame_locals, checks) - base)
    print(f"\n{name}: {sum(kinds.values())} guards in the tree "
          f"({', '.join(f'{n} {k}' for k, n in kinds.most_common(8))}, ...); warm check, "
          f"median of {checks}: {whole:.1f} µs, of which the root's own guards "
          f"{base:.1f} µs")
    for part, (count, micros) in alone.items():
        print(f"  {part}: {count} guards, {micros:.1f} µs ({micros / whole:.0%})")
    rest = whole - base - sum(micros for _, micros in alone.values())
    print(f"  the rest (guards outside these parts: aliasing, symbolic shapes, the path to "
          f"the model): "
          f"{rest:.1f} µs ({rest / whole:.0%})")


def _per_call_ns(call, calls: int) -> float:
    started = time.perf_counter_ns()
    for _ in range(calls):
        call()
    return (time.perf_counter_ns() - started) / calls


def loop_beside_compile(name: str, model: torch.nn.Module, args: tuple, blocks: int,
                        calls: int) -> None:
    """Median per-call ns of plain, torch.compile'd and Profiler-recorded calls, blocks
    interleaved; the loop's cost beyond torch.compile's is the paired difference."""
    import copy
    twin = copy.deepcopy(model)
    compiled = torch.compile(copy.deepcopy(model), backend=lambda gm, _inputs: gm.forward)
    found: dict = {"plain": [], "compile": [], "loop": []}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(*args)
        with pyfxprof.Profiler(model, schedule=lambda step: pyfxprof.ProfilerAction.RECORD):
            for _ in range(3):  # the capture (and its guard variant), then recorded calls
                model(*args)
            for _ in range(blocks):
                found["plain"].append(_per_call_ns(lambda: twin(*args), calls))
                found["compile"].append(_per_call_ns(lambda: compiled(*args), calls))
                found["loop"].append(_per_call_ns(lambda: model(*args), calls))
    med = {k: statistics.median(v) for k, v in found.items()}
    beyond = statistics.median(l - c for l, c in zip(found["loop"], found["compile"]))
    print(f"\n{name}: per call, medians of {blocks} interleaved blocks of {calls}: plain "
          f"{med['plain'] / 1e3:.1f} µs, torch.compile {med['compile'] / 1e3:.1f} µs "
          f"(+{(med['compile'] - med['plain']) / 1e3:.1f}), Profiler loop recorded "
          f"{med['loop'] / 1e3:.1f} µs; the loop beyond torch.compile: {beyond / 1e3:+.1f} µs "
          f"per call (paired)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=500, help="timed checks per tree")
    parser.add_argument("--loop", action="store_true", help="the loop beside torch.compile")
    parser.add_argument("--blocks", type=int, default=21)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(describe_machine())
    if args.loop:
        mlp = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                                  torch.nn.Linear(16, 16)).eval()
        loop_beside_compile("MLP (3 nodes)", mlp, (torch.randn(4, 16),), args.blocks,
                            args.calls)
        ids = torch.randint(1, 100, (1, 8), generator=torch.Generator().manual_seed(0))
        loop_beside_compile("tiny GPT-2, 8 tokens, no cache", tiny_models()["GPT-2"],
                            (ids, None, None, None, None, None, None, None, None, False),
                            args.blocks, args.calls // 10)
        return
    for name, model in tiny_models().items():
        report(name, model, args.checks)


if __name__ == "__main__":
    main()
