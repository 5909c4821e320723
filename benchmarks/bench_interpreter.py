"""The ProfilingInterpreter's two paths against the plain graph, the codegen executor and the
tutorial's time.time interpreter on 300 `x + 1` tensor ops: the instrumented graph underneath (no node-level
override) and the interpreted path (a subclass overriding run_node), interleaved in blocks of
--block calls of one method (default 5; a profile runs one graph over and over, while
--block 1, call by call, makes each method's code evict the others' from the CPU's caches and
adds that to every extra call).

Run: .venv/bin/python benchmarks/bench_interpreter.py [--runs N] [--block B]
"""

import argparse
import gc
import time

import numpy as np
import torch
from machine import describe_machine
from workloads import tensor_plus_one_chain

from pyfxprof import ProfilingInterpreter
from pyfxprof.timing.executors import CodegenExecutor
from pyfxprof.tools.baseline import TimeTimeInterpreter


class Overriding(ProfilingInterpreter):
    """Overrides run_node (and does nothing else): forces the interpreted path."""

    def run_node(self, n):
        return super().run_node(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100, help="runs per method")
    parser.add_argument("--block", type=int, default=5, help="calls of one method in a row")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(describe_machine())
    gm, inputs = tensor_plus_one_chain()
    fast, slow, tutorial = ProfilingInterpreter(gm), Overriding(gm), TimeTimeInterpreter(gm)
    codegen = CodegenExecutor(gm, 300)
    methods = {"plain GraphModule": lambda: gm(*inputs),
               "codegen executor": lambda: codegen.run(inputs),
               "interpreter, no override": lambda: fast.run(*inputs),
               "interpreter, run_node overridden": lambda: slow.run(*inputs),
               "time.time interpreter": lambda: tutorial.run(*inputs)}
    times = {name: [] for name in methods}
    codegen.reset(args.runs + args.block)  # its table reserved up front, as profile() does
    with torch.inference_mode():
        for call in methods.values():
            call()  # first calls (lazy setup) are not timed
        gc.disable()
        for _ in range(max(1, args.runs // args.block)):
            for name, call in methods.items():
                for _ in range(args.block):
                    start = time.perf_counter_ns()
                    call()
                    times[name].append(time.perf_counter_ns() - start)
        gc.enable()
    plain = np.median(times["plain GraphModule"])
    for name, values in times.items():
        added = (np.median(values) - plain) / 300
        print(f"{name:<34} median run {np.median(values) / 1e3:9.1f} µs, added {added:8.0f} ns/node")


if __name__ == "__main__":
    main()
