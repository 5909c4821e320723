"""The ProfilingInterpreter's two paths against the plain graph, the codegen executor and the
tutorial's time.time interpreter on 300 `x + 1` tensor ops: the instrumented graph underneath (no node-level
override) and the interpreted path (a subclass overriding run_node), interleaved in blocks of
--block calls of one method (default 5; a profile runs one graph over and over, while
--block 1, call by call, makes each method's code evict the others' from the CPU's caches and
adds that to every extra call). The added time per node is the median over rounds of
(the method's block median - the plain graph's block median in the same round) / nodes:
paired within a round, so the VM's slow drifts cancel.

With --workload torch_add the nodes are 300 `torch.add(x, 1)`: calls in the plain graph too,
so a timed call replaces a call rather than an inline `x + 1`.

Run: .venv/bin/python benchmarks/bench_interpreter.py [--runs N] [--block B] [--workload W]
"""

import argparse
import gc
import time

import numpy as np
import torch
from machine import describe_machine
from workloads import tensor_add_chain, tensor_plus_one_chain

from pyfxprof import ProfilingInterpreter
from pyfxprof.timing.executors import CodegenExecutor
from pyfxprof.tools.baseline import TimeTimeInterpreter


WORKLOADS = {"plus_one": tensor_plus_one_chain, "torch_add": lambda: tensor_add_chain(300)}


class Overriding(ProfilingInterpreter):
    """Overrides run_node (and does nothing else): forces the interpreted path."""

    def run_node(self, n):
        return super().run_node(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100, help="runs per method")
    parser.add_argument("--block", type=int, default=5, help="calls of one method in a row")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="plus_one")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(describe_machine())
    gm, inputs = WORKLOADS[args.workload]()
    fast, slow, tutorial = ProfilingInterpreter(gm), Overriding(gm), TimeTimeInterpreter(gm)
    codegen = CodegenExecutor(gm, 300)
    methods = {"plain GraphModule": lambda: gm(*inputs),
               "codegen executor": lambda: codegen.run(inputs),
               "interpreter, no override": lambda: fast.run(*inputs),
               "interpreter, run_node overridden": lambda: slow.run(*inputs),
               "time.time interpreter": lambda: tutorial.run(*inputs)}
    rounds = {name: [] for name in methods}
    codegen.reset(args.runs + args.block)  # its table reserved up front, as profile() does
    with torch.inference_mode():
        for call in methods.values():
            call()  # first calls (lazy setup) are not timed
        gc.disable()
        for _ in range(max(1, args.runs // args.block)):
            for name, call in methods.items():
                rounds[name].append(np.median([_timed_ns(call) for _ in range(args.block)]))
        gc.enable()
    plain = np.array(rounds["plain GraphModule"])
    for name, values in rounds.items():
        added = (np.array(values) - plain) / 300
        print(f"{name:<34} median run {np.median(values) / 1e3:9.1f} µs, added "
              f"{np.median(added):8.0f} ns/node (IQR over rounds {np.percentile(added, 25):.0f}"
              f"..{np.percentile(added, 75):.0f})")


def _timed_ns(call) -> int:
    start = time.perf_counter_ns()
    call()
    return time.perf_counter_ns() - start


if __name__ == "__main__":
    main()
