"""What `import pyfxprof` adds to `import torch`, in fresh interpreters, cases interleaved.

Usage: python benchmarks/bench_import.py [--repeat 7]

Each repeat starts one fresh interpreter per case, in turn, so load on the machine hits every
case alike. Inside each interpreter the imports are timed one after the other with
time.perf_counter, e.g. `import torch` then `import pyfxprof`: the second figure is what
pyfxprof adds on top of torch. "process" is the wall time of the whole interpreter.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Case name -> the statements a fresh interpreter times one by one.
CASES = {
    "torch alone": ["import torch"],
    "torch, then pyfxprof": ["import torch", "import pyfxprof"],
    "torch, pyfxprof, then pyfxprof.profile": ["import torch", "import pyfxprof",
                                               "pyfxprof.profile"],
    "pyfxprof, then pyfxprof.load (no torch)": ["import pyfxprof", "pyfxprof.load"],
}

TIMER = """
import json, time
seconds = []
for statement in {statements!r}:
    started = time.perf_counter()
    exec(statement)
    seconds.append(time.perf_counter() - started)
print(json.dumps(seconds))
"""


def run_case(statements: list[str]) -> list[float]:
    """[process wall seconds, seconds of each statement] in one fresh interpreter."""
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", TIMER.format(statements=statements)],
                            cwd=ROOT, check=True, capture_output=True, text=True)
    return [time.perf_counter() - started] + json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    times = {name: [] for name in CASES}
    for _ in range(args.repeat):
        for name, statements in CASES.items():
            times[name].append(run_case(statements))
    print(f"python {sys.version.split()[0]}; {args.repeat} interleaved repeats; seconds, "
          "median (min..max)")
    for name, statements in CASES.items():
        columns = zip(*times[name])
        labels = ["process"] + statements
        cells = [f"{label}: {statistics.median(c):.3f} ({min(c):.3f}..{max(c):.3f})"
                 for label, c in zip(labels, columns)]
        print(f"{name}\n    " + "\n    ".join(cells))


if __name__ == "__main__":
    main()
