"""Start-up cost of pyfxprof's commands, each against `python -c "import torch"`, in fresh
interpreters, cases interleaved (and, with --before DIR, each case also run on an older source
tree, interleaved with this one).

Usage: python benchmarks/bench_import.py [--repeat 7] [--before DIR] [--main-job N]

Each repeat runs every case once per tree, in turn, so load on the machine hits every case
alike; a case's figure is the wall time of its whole process. Cases: `pyfxprof --help`,
`pyfxprof profile --help`, `import pyfxprof; pyfxprof.profile`, a forward profile of a small
fx-traceable CNN (5 runs) end to end, and `pyfxprof report` of a saved profile.

--before DIR: DIR holds an older pyfxprof source tree with its extension built (or copied in),
e.g. `git archive 999d812 | tar -x -C DIR` and the built pyfxprof/_C*.so copied there.

--main-job N: also runs the default `pyfxprof profile` (ResNet-18, 50 runs) N times per tree,
interleaved, and reports its wall time, the timed work (the sum of the saved run totals) and
the rest: the time outside the timed runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: A small fx-traceable CNN profiled forward, 5 runs, end to end.
SMALL_CNN = """
import torch, pyfxprof
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16),
                            torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3, padding=1),
                            torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                            torch.nn.Linear(16, 10))
prof = pyfxprof.profile(model, (torch.randn(8, 3, 32, 32),), runs=5, progress=False)
print(prof.table(top=5))
"""


def cases(saved: Path) -> dict[str, list[str]]:
    """Case name -> the arguments of the interpreter it starts."""
    return {
        "import torch (baseline)": ["-c", "import torch"],
        "pyfxprof --help": ["-m", "pyfxprof", "--help"],
        "pyfxprof profile --help": ["-m", "pyfxprof", "profile", "--help"],
        "import pyfxprof; pyfxprof.profile": ["-c", "import pyfxprof; pyfxprof.profile"],
        "forward profile, small CNN, 5 runs": ["-c", SMALL_CNN],
        "pyfxprof report saved.json": ["-m", "pyfxprof", "report", str(saved), "--top", "5"],
    }


def run_process(arguments: list[str], tree: Path) -> float:
    """Wall seconds of one fresh interpreter running `arguments` with `tree` first on the path."""
    started = time.perf_counter()
    subprocess.run([sys.executable, *arguments], cwd=tempfile.gettempdir(), check=True,
                   capture_output=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    return time.perf_counter() - started


def save_profile(path: Path) -> None:
    """A saved profile of the small CNN for the `report` case (written by this tree)."""
    code = SMALL_CNN + f"\nprof.save({str(path)!r})\n"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                   env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def main_job(tree: Path, out: Path) -> tuple[float, float]:
    """(wall seconds, seconds of timed work) of the default `pyfxprof profile` on `tree`."""
    wall = run_process(["-m", "pyfxprof", "profile", "--save", str(out)], tree)
    total = subprocess.run(
        [sys.executable, "-c", "import pyfxprof; "
         f"print(int(pyfxprof.load({str(out)!r}).run_totals.sum()))"],
        check=True, capture_output=True, text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout
    out.unlink()
    return wall, int(total) / 1e9


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} ({min(values):.2f}..{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", type=Path, help="an older source tree to compare with")
    parser.add_argument("--main-job", type=int, default=0, metavar="N",
                        help="also run the default `pyfxprof profile` N times per tree")
    args = parser.parse_args()
    trees = {"this tree": ROOT} if args.before is None else {"before": args.before.resolve(),
                                                             "after": ROOT}
    with tempfile.TemporaryDirectory() as scratch:
        saved = Path(scratch) / "saved.json"
        save_profile(saved)
        table = cases(saved)
        times = {(case, tree): [] for case in table for tree in trees}
        for _ in range(args.repeat):
            for case, arguments in table.items():
                for tree, path in trees.items():
                    times[case, tree].append(run_process(arguments, path))
        jobs = {tree: [] for tree in trees}
        for _ in range(args.main_job):
            for tree, path in trees.items():
                jobs[tree].append(main_job(path, Path(scratch) / "job.json"))
    print(f"python {sys.version.split()[0]}; {args.repeat} interleaved repeats; process wall "
          "seconds, median (min..max); '- torch': the median minus that of `import torch` in "
          "the same tree")
    for case in table:
        for tree in trees:
            extra = statistics.median(times[case, tree]) - statistics.median(
                times["import torch (baseline)", tree])
            print(f"  {case:<36} {tree:<9} {summary(times[case, tree])}   - torch {extra:+.2f}")
    for tree, runs in jobs.items():
        if runs:
            walls, timed = [w for w, _ in runs], [t for _, t in runs]
            outside = [w - t for w, t in runs]
            print(f"  default main job, {tree:<9} wall {summary(walls)}  timed work "
                  f"{summary(timed)}  outside it {summary(outside)}")


if __name__ == "__main__":
    main()
