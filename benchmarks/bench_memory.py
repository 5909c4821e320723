"""Peak memory of a big profile: peak RSS growth of `pyfxprof.profile()` over the raw samples
(runs x nodes x 8 bytes), measured in a fresh subprocess per size.

Run: .venv/bin/python benchmarks/bench_memory.py [--runs 10000] [--nodes 1000]
"""

import argparse
import json
import subprocess
import sys

from machine import describe_machine

CHILD = r"""
import json, operator, resource, sys
import torch, torch.fx as fx
import pyfxprof
runs, nodes = int(sys.argv[1]), int(sys.argv[2])
graph = fx.Graph(); value = graph.placeholder("x")
for _ in range(nodes):
    value = graph.call_function(operator.add, (value, 1))
graph.output(value)
gm = fx.GraphModule(torch.nn.Module(), graph)
pyfxprof.profile(gm, (0,), runs=2, warmup=0, progress=False)  # imports and code paths warm
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
prof = pyfxprof.profile(gm, (0,), runs=runs, warmup=1, progress=False)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"before": before, "peak": peak, "shape": list(prof.samples.shape)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    args = parser.parse_args()
    print(describe_machine())
    out = subprocess.run([sys.executable, "-c", CHILD, str(args.runs), str(args.nodes)],
                         check=True, capture_output=True, text=True).stdout
    found = json.loads(out.strip().splitlines()[-1])
    raw = args.runs * args.nodes * 8
    growth = found["peak"] - found["before"]
    print(f"{args.runs:,} runs x {args.nodes:,} nodes (Python int adds): raw samples "
          f"{raw / 2**20:.1f} MiB, peak RSS growth {growth / 2**20:.1f} MiB = "
          f"{growth / raw:.2f}x the raw samples (samples {found['shape']})")


if __name__ == "__main__":
    main()
