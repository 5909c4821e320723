"""Accuracy in context: is a node's row what removing that node saves?

ResNet-18 (random weights, eval) on a 1x3x96x96 input, traced with torch.fx, torch on 1 thread.
For each target node (small nodes right after large ones: bn1 after conv1, relu after bn1,
layer1.0.bn1 after layer1.0.conv1, ...; and large nodes as controls) four figures, in µs:

  row      the median of the node's row in a pyfxprof.profile (fx capture, codegen);
  saved    what removing the node saves: the uninstrumented graph against the same graph with
           that node replaced by its input (BatchNorm and ReLU keep the shape), in interleaved
           rounds (each round runs every variant, in a fresh random order, as one block of
           calls; the block's median is its figure): the median over rounds of (plain -
           without the node), with a distribution-free 95% interval of that median. Timed on
           the thread's CPU clock (a loaded machine's preemptions left out, page faults in):
           "window" from just before the node feeding it to just after the node using it
           (both graphs stamp there), "whole" the whole call; "successor +": how much longer
           the node using it takes without it (median over rounds, its 95% interval): the
           part of the row that removing the node moves onto the next node (a cold input the
           next node then reads) instead of saving;
  alone    the node's module called on its own input in a loop (its output freed and its
           input reused every call: warm caches, a recycled allocation);
  Alone    what every report now prints beside the row: profile()'s own replay of the node
           alone, warm (alone=[targets]; run/alone.py), median over the profiles;
  context  the node's module called on its input right after the node before it ran
           (the large node's output freshly written, the node's own output freshly allocated),
           timed around the node's call only.

Then the experiments behind a difference: minor page faults (getrusage) in each window with
and without the node ("faults", plain/removed, mean per call), per call of the whole graph
and of the node alone, and the node in context on a fresh output against the node in
context writing into an output allocated once (BatchNorm's eval kernel, ``out=``; ResNet's
ReLUs work in place and allocate nothing).

Run: .venv/bin/python benchmarks/bench_accuracy_context.py [--rounds N] [--calls M] [--runs R]
     [--targets bn1,relu,...] [--whole] [--cold] [--torch-profiler] [--replay]
     (--replay: also Profile.replay's warm and cold medians of each node alone, what every
     report points to for the node alone; --whole: also A/B the whole call; on a
     loaded machine its interval is too wide to resolve a small node; --cold: only the
     BatchNorms in context with the caches flushed or not, fresh or preallocated outputs;
     --torch-profiler: only torch.profiler's figures, per call and averaged over calls)
(set MALLOC_* environment variables, e.g. MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_,
MALLOC_TOP_PAD_, to see what glibc's heap does to the figures)."""

import argparse
import copy as copy_module
import os
import random
import resource
import time

import numpy as np
import torch
import torch.fx as fx
from machine import describe_machine

import pyfxprof
from pyfxprof.stats import order_statistics

#: (node name in the traced graph, the node that runs just before it) — small nodes after large
#: ones, and large nodes as controls.
TARGETS = ("bn1", "relu", "maxpool", "layer1_0_conv1", "layer1_0_bn1", "layer1_0_relu",
           "layer2_0_bn1", "layer2_0_relu", "layer4_1_bn2")
REMOVABLE = ("bn", "relu")  # nodes whose removal keeps every shape


STAMPS: list = []
FAULTS: list = []


def stamp() -> None:
    """Append the thread's CPU time (ns) to STAMPS (the time other processes on a loaded
    machine take from it is left out; its page faults, in the kernel, are in) and the
    process's minor page faults so far to FAULTS."""
    FAULTS.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
    STAMPS.append(time.thread_time_ns())


def windowed(gm: fx.GraphModule, name: str, remove: bool) -> fx.GraphModule:
    """A copy of `gm` stamping the time before the node feeding `name` and after the first
    node using `name` (the window), with `name` replaced by its input when `remove`."""
    copy = fx.GraphModule(gm, copy_module.deepcopy(gm.graph))
    node = next(n for n in copy.graph.nodes if n.name == name)
    before, after = node.args[0], next(iter(node.users))
    with copy.graph.inserting_before(before):
        copy.graph.call_function(stamp)
    with copy.graph.inserting_before(after):
        copy.graph.call_function(stamp)
    with copy.graph.inserting_after(after):
        copy.graph.call_function(stamp)
    if remove:
        node.replace_all_uses_with(node.args[0])
        copy.graph.erase_node(node)
    copy.graph.lint()
    copy.recompile()
    return copy


def window_ns(gm: fx.GraphModule, x: torch.Tensor, calls: int, faults: list,
              successor: list) -> float:
    """The median over `calls` calls of `gm(x)` of its window (ns); each call's page faults
    in the window appended to `faults`, the block's median time of the node using the
    target (the window's last node) to `successor`."""
    found, last = [], []
    for _ in range(calls):
        STAMPS.clear()
        FAULTS.clear()
        gm(x)
        found.append(STAMPS[2] - STAMPS[0])
        last.append(STAMPS[2] - STAMPS[1])
        faults.append(FAULTS[2] - FAULTS[0])
    successor.append(float(np.median(last)))
    return float(np.median(found))


def median_interval(values: np.ndarray) -> tuple[float, float, float]:
    """(median, low, high): the median with its order-statistic 95% interval (the stats
    stage's)."""
    return (float(np.median(values)), *order_statistics.median_interval(values))


def block_ns(call, calls: int, clock=time.perf_counter_ns) -> float:
    """The median time of `calls` calls of `call()` (ns) on `clock`."""
    found = []
    for _ in range(calls):
        start = clock()
        call()
        found.append(clock() - start)
    return float(np.median(found))


def inputs_of(gm: fx.GraphModule, x: torch.Tensor) -> dict:
    """Each target's input tensor and the input of the node before it, from one run."""
    env: dict = {}

    class Recorder(fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            env[n.name] = (n, result)
            return result
    Recorder(gm).run(x)
    return env


def context_call(gm, env, name, out: bool = False):
    """(a call running the node before `name`, then timing `name` alone; the list of its
    times, ns; the output buffer it writes with `out`)."""
    node = env[name][0]
    before = node.args[0]
    before_module = gm.get_submodule(before.target) if before.op == "call_module" else None
    module = gm.get_submodule(node.target)
    before_input = env[before.args[0].name][1] if before.args else None
    took: list = []
    buffer, spare = torch.empty_like(env[name][1]), (torch.empty(0), torch.empty(0))

    def call():
        y = before_module(before_input) if before_module is not None else env[before.name][1]
        start = time.perf_counter_ns()
        if out:  # the eval-mode batch norm kernel, into a buffer allocated once
            torch.ops.aten._native_batch_norm_legit_no_training.out(
                y, module.weight, module.bias, module.running_mean, module.running_var,
                module.momentum, module.eps, out0=buffer, out1=spare[0], out2=spare[1])
        else:
            module(y)
        took.append(time.perf_counter_ns() - start)
    return call, took, buffer


def cold_experiment(gm, env, targets: list, rounds: int, calls: int) -> None:
    """BatchNorm nodes right after the node feeding them, timed alone (µs, median), with the
    caches warm (the loop's own data only) or flushed (64 MiB written) before that node runs,
    into a fresh output (the allocator's) or into an output allocated once (``out=``), left
    cold by the flush or written just before: which of the node's input, output and
    parameters being cold makes it slower in the model."""
    flush = torch.zeros(16 * 2 ** 20)
    modes = ("warm, fresh output", "flushed, fresh output", "flushed, cold out=",
             "flushed, warmed out=")
    found = {(t, m): [] for t in targets for m in modes}
    for _ in range(rounds):
        jobs = [(t, m) for t in targets for m in modes]
        random.shuffle(jobs)
        for t, mode in jobs:
            call, took, buffer = context_call(gm, env, t, out="out=" in mode)
            for _ in range(calls):
                if mode != modes[0]:
                    flush.add_(1)
                if mode == modes[3]:
                    buffer.zero_()
                call()
            found[t, mode].append(float(np.median(took)))
    print(f"{'node':<16}" + "".join(f"{m:>24}" for m in modes))
    for t in targets:
        print(f"{t:<16}" + "".join(f"{np.median(found[t, m]) / 1e3:>24.1f}" for m in modes))


def torch_profiler_experiment(gm, x, targets: list, steps: int) -> None:
    """torch.profiler's view of the same calls (µs): each BatchNorm's ``aten::batch_norm``
    and each in-place ReLU's ``aten::relu_``, per call in the model (the median over steps
    of that node's own event), against the mean over all calls of the op, which is what
    ``key_averages()`` prints (its "CPU time avg")."""
    ops = {"bn": "aten::batch_norm", "relu": "aten::relu_"}
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            gm(x)
    names = [n.name for n in gm.graph.nodes if n.op == "call_module"]
    for key, op in ops.items():
        durations = np.array([e.cpu_time_total for e in prof.events() if e.name == op])
        per_step = durations.reshape(steps, -1)
        nodes = [n for n in names if isinstance(gm.get_submodule(
            next(m.target for m in gm.graph.nodes if m.name == n)),
            torch.nn.BatchNorm2d if key == "bn" else torch.nn.ReLU)]
        medians = dict(zip(nodes, np.median(per_step, axis=0)))
        print(f"{op}: {per_step.shape[1]} calls per step; mean over all calls "
              f"{durations.mean():.1f} µs (median of the per-call medians "
              f"{np.median(per_step):.1f}); per call: " + ", ".join(
                  f"{t} {medians[t]:.1f}" for t in targets if t in medians))


def replay_lines(prof, targets: list, rows: dict, window: dict) -> None:
    """Per target: its row (median over all profiles' runs), what removing it saves (the
    window's median, when removable) and Profile.replay's warm and cold medians of it
    alone (the report's pointer for the node alone), with row / warm and row / cold."""
    print(f"{'node':<16}{'row':>8}{'saved':>8}{'replay warm':>13}{'replay cold':>13}"
          f"{'row/warm':>10}{'row/cold':>10}")
    for t in targets:
        found = prof.replay(t, cache="both", budget=2.0)
        row = np.median(rows[t]) / 1e3
        saved = (np.median(np.asarray(window[t, 0]) - np.asarray(window[t, 1])) / 1e3
                 if (t, 0) in window else np.nan)
        warm, cold = found.warm_ns / 1e3, found.cold_ns / 1e3
        print(f"{t:<16}{row:>8.1f}{saved:>8.1f}{warm:>13.1f}{cold:>13.1f}"
              f"{row / warm:>10.2f}{row / cold:>10.2f}")


def report_lines(targets: list, rows: dict, window: dict, reported: dict) -> None:
    """Per target: the two figures every report now prints side by side (its row, and
    Alone: profile()'s warm replay of the node, median over the profiles), Row/alone, and
    what removing the node saves (the window's median) over each."""
    print(f"{'node':<16}{'row':>8}{'Alone':>8}{'Row/alone':>11}{'saved':>8}"
          f"{'saved/row':>11}{'saved/Alone':>13}")
    for t in targets:
        row, alone = np.median(rows[t]) / 1e3, np.nanmedian(reported[t]) / 1e3
        saved = (np.median(np.asarray(window[t, 0]) - np.asarray(window[t, 1])) / 1e3
                 if (t, 0) in window else np.nan)
        print(f"{t:<16}{row:>8.1f}{alone:>8.1f}{row / alone:>10.2f}x{saved:>8.1f}"
              f"{saved / row:>11.2f}{saved / alone:>13.2f}")


def faults_per_call(call, calls: int = 200) -> float:
    """Minor page faults per call of `call()`."""
    call()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        call()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--whole", action="store_true", help="also A/B the whole call")
    parser.add_argument("--cold", action="store_true", help="only the cold-cache experiment")
    parser.add_argument("--torch-profiler", action="store_true",
                        help="only torch.profiler's per-call figures (--rounds steps)")
    parser.add_argument("--replay", action="store_true",
                        help="also, after the rounds, what the report points to for the "
                             "node alone: Profile.replay(node, cache='both') of the last "
                             "profile, warm and cold, beside the row and the saving")
    args = parser.parse_args()
    targets = args.targets.split(",")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    import torchvision
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 96, 96)
    gm = fx.symbolic_trace(model)
    env = inputs_of(gm, x)
    removable = [t for t in targets if any(k in t for k in REMOVABLE)]
    variants = {"plain": gm, **{t: windowed(gm, t, True) for t in removable}} if args.whole \
        else {}
    windows = {(t, remove): windowed(gm, t, remove) for t in removable for remove in (0, 1)}
    alone = {t: (lambda m=gm.get_submodule(env[t][0].target), i=env[t][0].args[0].name:
                 m(env[i][1])) for t in targets}
    contexts = {t: context_call(gm, env, t) for t in targets}
    bns = [t for t in targets if "bn" in t]  # (ResNet's ReLUs are in place: no output)
    preallocated = {t: context_call(gm, env, t, out=True) for t in bns}
    if args.torch_profiler:
        with torch.inference_mode():
            gm(x)
            print(describe_machine())
            torch_profiler_experiment(gm, x, targets, args.rounds)
        return
    if args.cold:
        with torch.inference_mode():
            print(describe_machine())
            cold_experiment(gm, env, [t for t in targets if "bn" in t], args.rounds, args.calls)
        return
    print(describe_machine(), "·", " ".join(f"{k}={v}" for k, v in os.environ.items()
                                            if k.startswith("MALLOC_")) or "glibc defaults")
    rows: dict = {t: [] for t in targets}
    blocks: dict = {k: [] for k in variants}
    window: dict = {k: [] for k in windows}
    window_faults: dict = {k: [] for k in windows}
    successor: dict = {k: [] for k in windows}
    alone_ns: dict = {t: [] for t in targets}
    reported: dict = {t: [] for t in targets}  # each profile's Alone column (run/alone.py)
    with torch.inference_mode():
        for _ in range(3):
            gm(x)
        for round_ in range(args.rounds):
            jobs = [("variant", k) for k in variants] + [("window", k) for k in windows] + [("alone", t) for t in targets] + \
                   [("context", t) for t in targets] + [("prealloc", t) for t in bns] + \
                   [("profile", None)] * (round_ % 3 == 0)
            random.shuffle(jobs)
            for kind, key in jobs:
                if kind == "window":
                    window[key].append(window_ns(windows[key], x, args.calls, window_faults[key],
                                                 successor[key]))
                elif kind == "variant":
                    blocks[key].append(block_ns(lambda g=variants[key]: g(x), args.calls,
                                                time.thread_time_ns))
                elif kind == "alone":
                    alone_ns[key].append(block_ns(alone[key], args.calls))
                elif kind in ("context", "prealloc"):
                    call = (contexts if kind == "context" else preallocated)[key][0]
                    block_ns(call, args.calls)
                else:
                    prof = pyfxprof.profile(model, (x,), runs=args.runs, warmup=3,
                                            progress=False, capture="fx", alone=targets)
                    names = list(prof.nodes["name"])
                    for t in targets:
                        rows[t].extend(prof.samples[:, names.index(t)].tolist())
                        reported[t].append(float(prof.nodes["alone_ns"][names.index(t)]))
    plain = np.asarray(blocks.get("plain", [np.nan]))
    print(f"rounds {args.rounds} x {args.calls} calls per block; whole graph median (CPU) "
          f"{np.median(plain) / 1e3:.0f} µs; load after: {open('/proc/loadavg').read().split()[0]}")
    print(f"{'node':<16}{'row':>8}{'saved, window [95%]':>26}{'saved, whole [95%]':>28}"
          f"{'alone':>8}{'context':>9}{'prealloc':>9}{'row/saved':>10}{'faults':>9}"
          f"{'successor +':>12}")
    for t in targets:
        row = np.median(rows[t]) / 1e3
        saved = whole = "-"
        ratio = ""
        faults = shifted = ""
        if t in variants:
            m, lo, hi = median_interval((plain - np.asarray(blocks[t])) / 1e3)
            whole = f"{m:.1f} [{lo:.1f}, {hi:.1f}]"
        if t in removable:
            m, lo, hi = median_interval((np.asarray(window[t, 0]) -
                                         np.asarray(window[t, 1])) / 1e3)
            saved = f"{m:.1f} [{lo:.1f}, {hi:.1f}]"
            ratio = f"{row / m:.2f}" if m > 0 else "-"
            faults = (f"{np.mean(window_faults[t, 0]):.1f}/"
                      f"{np.mean(window_faults[t, 1]):.1f}")
            m, lo, hi = median_interval((np.asarray(successor[t, 1]) -
                                         np.asarray(successor[t, 0])) / 1e3)
            shifted = f"{m:.1f} [{lo:.1f}, {hi:.1f}]"
        ctx = np.median(contexts[t][1]) / 1e3
        pre = f"{np.median(preallocated[t][1]) / 1e3:.1f}" if t in preallocated else "-"
        print(f"{t:<16}{row:>8.1f}{saved:>26}{whole:>28}{np.median(alone_ns[t]) / 1e3:>8.1f}"
              f"{ctx:>9.1f}{pre:>9}{ratio:>10}{faults:>9}  {shifted}")
    report_lines(targets, rows, window, reported)
    if args.replay:
        replay_lines(prof, targets, rows, window)
    print("minor page faults per call: whole graph "
          f"{faults_per_call(lambda: gm(x)):.1f}; " + "; ".join(
              f"{t} alone {faults_per_call(alone[t]):.2f}, in context "
              f"{faults_per_call(contexts[t][0]):.2f}" for t in targets[:3]))


if __name__ == "__main__":
    main()
