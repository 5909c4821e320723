"""GPU overhead: host and device time per run of a model plain vs instrumented with pyfxprof's
marks + CUDA events, as added ns per node and ratios to the plain run, interleaved in one
process. Needs a CUDA GPU; without one it says so and exits 0.

Run: .venv/bin/python benchmarks/bench_gpu.py [--runs N]
"""

import argparse
import sys

import numpy as np
import torch
from machine import describe_machine
from workloads import resnet18, tensor_add_chain

from pyfxprof.capture.tracing import capture, timed_nodes
from pyfxprof.timing.device_events import ensure_cuda_runtime
from pyfxprof.timing.executors import CodegenExecutor


def run_times(call, runs: int) -> tuple[np.ndarray, np.ndarray]:
    """Host ns (perf_counter) and device ns (events around the call) per run."""
    import time
    host, device = [], []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        start.record()
        call()
        end.record()
        host.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
        device.append(start.elapsed_time(end) * 1e6)
    return np.asarray(host), np.asarray(device)


def compare(name: str, model, inputs, runs: int) -> None:
    model = model.cuda().eval()
    inputs = tuple(x.cuda() for x in inputs)
    with torch.inference_mode():
        gm = capture(model).graph_module
        n = len(timed_nodes(gm.graph))
        executor = CodegenExecutor(gm, n, device_events=True)
        calls = {"plain": lambda: gm(*inputs), "pyfxprof codegen + events": lambda: executor.run(inputs)}
        samples = {k: ([], []) for k in calls}
        for _ in range(runs // 5):
            for method, call in calls.items():
                host, device = run_times(call, 5)
                samples[method][0].extend(host)
                samples[method][1].extend(device)
            executor.reset()
    plain_host, plain_device = (np.median(v) for v in samples["plain"])
    print(f"\n{name}: {n} nodes, {runs} runs per method in interleaved blocks of 5")
    print(f"{'method':<28}{'host ms':>9}{'device ms':>11}{'host +ns/node':>15}"
          f"{'device +ns/node':>17}{'host x':>8}{'device x':>10}")
    for method, (host, device) in samples.items():
        h, d = np.median(host), np.median(device)
        print(f"{method:<28}{h / 1e6:>9.3f}{d / 1e6:>11.3f}{(h - plain_host) / n:>15.0f}"
              f"{(d - plain_device) / n:>17.0f}{h / plain_host:>8.3f}{d / plain_device:>10.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA GPU here: nothing measured (see benchmarks/README.md)")
        return 0
    print(describe_machine(), "·", torch.cuda.get_device_name(), "·", ensure_cuda_runtime())
    compare("500 tensor adds", *tensor_add_chain(), args.runs)
    compare("ResNet-18 5x3x224x224", *resnet18(), args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
