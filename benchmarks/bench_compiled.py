"""Compiled models per Inductor kernel: what timing each kernel call costs. For a small
Conv/BN/ReLU CNN and a tiny GPT-2 (dict inputs), compiled once by Inductor: the compiled call's
median plain vs instrumented (interleaved blocks, one process), the added ns per kernel call, and
torch.profiler's cost on the same compiled call (per run and per recorded event); the user's own
torch.compile of the model is timed too, to show pyfxprof's compile runs the same code.

Run: .venv/bin/python benchmarks/bench_compiled.py [--blocks B] [--calls C]
"""

import argparse
import os
import tempfile
import time

import numpy as np
import torch
from machine import describe_machine

from pyfxprof.capture.inductor import InductorCapture, compile_settings
from pyfxprof.capture.inputs import BoundInputs
from pyfxprof.timing.compiled_executor import CompiledExecutor, plan_graph


class CNN(torch.nn.Module):
    """Conv/BN/ReLU x2, global average pool, linear head."""

    def __init__(self):
        super().__init__()
        self.c1, self.b1 = torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16)
        self.c2, self.b2 = torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.b1(self.c1(x)))
        x = torch.relu(self.b2(self.c2(x)))
        return self.fc(x.mean((2, 3)))


class Linears(torch.nn.Module):
    """`n` Linear(32, 32) layers with a ReLU after each: many small kernels."""

    def __init__(self, n: int = 40):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(32, 32) for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def models() -> dict:
    import transformers
    config = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=100,
                                     n_positions=64, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    return {"CNN 1x3x32x32": (CNN().eval(), (torch.randn(1, 3, 32, 32),), {}),
            "tiny GPT-2 1x16": (transformers.GPT2Model(config).eval(), (),
                                {"input_ids": torch.randint(0, 100, (1, 16))}),
            "40 x Linear(32, 32)+ReLU 16x32": (Linears().eval(), (torch.randn(16, 32),), {})}


def paired_ns(plain, instrumented, executor, calls: int) -> tuple[np.ndarray, np.ndarray]:
    """Wall ns of `calls` plain calls and `calls` instrumented runs, alternating call by call
    (which goes first alternates too: the second call of a pair finds warmer caches)."""
    times = np.empty((calls, 2))
    for i in range(calls):
        for column in (0, 1) if i % 2 else (1, 0):
            executor.instrumented(bool(column))
            times[i, column] = _wall(instrumented if column else plain)
    executor.instrumented(False)
    return times[:, 0], times[:, 1]


def profiled_ns(call, calls: int) -> tuple[np.ndarray, int]:
    """Wall ns of `calls` calls inside one torch.profiler session, and its events per call."""
    times = np.empty(calls)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for i in range(calls):
            start = time.perf_counter_ns()
            call()
            times[i] = time.perf_counter_ns() - start
    return times, round(len(prof.events()) / calls)


def measure(name: str, model, args: tuple, kwargs: dict, blocks: int, calls: int) -> None:
    capture = InductorCapture(*compile_settings(model, True))
    capture.first_call(BoundInputs(args, kwargs))
    users = torch.compile(model)
    users(*args, **kwargs)
    executor = CompiledExecutor(capture.compiled, kwargs, [plan_graph(g) for g in capture.graphs])
    executor.reset(blocks * calls)
    plain = lambda: capture.compiled(*args, **kwargs)  # noqa: E731
    rows = {"user's torch.compile": [], "plain": [], "instrumented": [], "torch.profiler": []}
    differences = []
    with executor:
        for _ in range(blocks):
            executor.instrumented(False)
            rows["user's torch.compile"].append(np.median(
                [_wall(lambda: users(*args, **kwargs)) for _ in range(calls)]))
            plain_ns, timed_ns = paired_ns(plain, lambda: executor.run(args), executor, calls)
            rows["plain"].append(np.median(plain_ns))
            rows["instrumented"].append(np.median(timed_ns))
            differences.append(np.median(timed_ns - plain_ns))
            profiler_ns, events = profiled_ns(plain, calls)
            rows["torch.profiler"].append(np.median(profiler_ns))
    report(name, executor, rows, differences, events)


def _wall(call) -> int:
    start = time.perf_counter_ns()
    call()
    return time.perf_counter_ns() - start


def report(name: str, executor, rows: dict, differences: list, events: int) -> None:
    kernels = sum(len(plan.sites) for plan in executor.plans)
    med = {key: float(np.median(values)) for key, values in rows.items()}
    print(f"{name}: {len(executor.plans)} graph(s), {kernels} kernel calls timed; medians of "
          f"{len(differences)} blocks (plain and instrumented alternate call by call)")
    for key, value in med.items():
        print(f"  {key:22s} {value / 1e3:9.1f} µs  (x{value / med['plain']:.3f} of plain)")
    paired = float(np.median(differences))
    spread = np.subtract(*np.percentile(differences, [75, 25]))
    print(f"  added by timing (median of paired differences): {paired:+.0f} ns per call "
          f"(IQR over blocks {spread:.0f} ns), {paired / max(kernels, 1):+.0f} ns per kernel call")
    cost = med["torch.profiler"] - med["plain"]
    print(f"  torch.profiler: {cost / 1e3:+.1f} µs per call, {events} events per call, "
          f"{cost / max(events, 1):+.0f} ns per event")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="bench_compiled_"))
    torch.set_num_threads(1)
    print(describe_machine())
    with torch.inference_mode():
        for name, (model, inputs, kwargs) in models().items():
            measure(name, model, inputs, kwargs, args.blocks, args.calls)
    print(describe_machine())


if __name__ == "__main__":
    main()
