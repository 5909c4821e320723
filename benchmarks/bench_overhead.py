"""Added overhead per node of each timing method, measured side by side in one process:
plain GraphModule, pyfxprof codegen, pyfxprof interpreter, the FX tutorial's time.time
interpreter and torch.profiler, on 500 tiny Python ops, 500 tiny tensor ops and ResNet-18.

Run: .venv/bin/python benchmarks/bench_overhead.py [--runs N] [--resnet-runs N]
"""

import argparse
import os

os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # keep torch.profiler's console chatter out

import torch  # noqa: E402
from machine import describe_machine  # noqa: E402
from workloads import int_add_chain, resnet18, tensor_add_chain  # noqa: E402

from pyfxprof.tools.overhead import compare_overhead  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300, help="runs per method, tiny graphs")
    parser.add_argument("--resnet-runs", type=int, default=20, help="runs per method, ResNet-18")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: thread-pool wake-ups are noise here)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(describe_machine())
    for name, (model, inputs), runs in [
            ("500 Python int adds", int_add_chain(), args.runs),
            ("500 tensor adds (1 element)", tensor_add_chain(), args.runs),
            ("ResNet-18, 5x3x224x224", resnet18(), args.resnet_runs)]:
        report = compare_overhead(model, inputs, runs=runs, warmup=3, name=name)
        print()
        print(report.format())


if __name__ == "__main__":
    main()
