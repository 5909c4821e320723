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
interleaved, and reports its wall time, the timed work (the graph's runs: the sum of the saved
run totals, the (Python outside the graph) row left out, and the sum of each run's wall time,
read to read (the saved run_noise: unlike the totals, it keeps the graph's time between its
nodes when that row is resolved); and the timing of the user's own call between them,
meta["wall_s"]["call_timed"], on trees that time it) and the rest: the time outside the timed
runs, without and with the call's timing, with the runs as totals and as walls. On a tree
with `--timings`, the job runs with it and its steps (medians) are printed too, with its total
and what no step covers (the process's wall time minus that total: the end of the process,
after the table, and on trees without the "interpreter start" step, the start too).
"""

from __future__ import annotations

import argparse
import json
import os
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


#: The main job's profile() with every call of the model counted (conv1 runs once per call:
#: the analysis run, the warm-up and timed runs, the user's call and its breakdown), on a
#: small input: a count, the same under any load but for the warm-up runs where the tree's
#: default warm-up is "auto" (their number is printed with it).
COUNT_CALLS = """
import json, torch, pyfxprof
from pyfxprof.cli.default_model import resnet18
model, calls = resnet18().eval(), [0]
conv1 = model.conv1
conv1.register_forward_pre_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
prof = pyfxprof.profile(model, (torch.randn(1, 3, 32, 32),), progress=False)
call = prof.meta.get("call", {}).get("runs", 0)
print(json.dumps([calls[0], prof.n_runs, call, prof.meta["warmup"]]))
"""


def model_calls(tree: Path) -> str:
    """The model calls of the main job's profile() on `tree` (COUNT_CALLS), in words."""
    total, runs, call, warmup = json.loads(subprocess.run(
        [sys.executable, "-c", COUNT_CALLS], cwd=tempfile.gettempdir(), check=True,
        capture_output=True, text=True,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}).stdout)
    return (f"{total} model calls: {runs} timed runs, {call} timed calls of yours, "
            f"{total - runs - call} untimed ({warmup} warm-up runs)")


def cases(saved: str) -> dict[str, list[str]]:
    """Case name -> the arguments of the interpreter it starts (`saved`: the saved profile's
    path, where "{tree}" stands for the tree's name: each tree reads a file it wrote)."""
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
    done = subprocess.run([sys.executable, *arguments], cwd=tempfile.gettempdir(),
                          capture_output=True, text=True,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    if done.returncode:
        raise SystemExit(f"{arguments} on {tree} failed: {done.stderr.strip()[-500:]}")
    return time.perf_counter() - started


def save_profile(path: Path, tree: Path) -> None:
    """A saved profile of the small CNN for the `report` case, written by `tree` (an older
    tree may not read a newer file format)."""
    code = SMALL_CNN + f"\nprof.save({str(path)!r})\n"
    subprocess.run([sys.executable, "-c", code], cwd=tempfile.gettempdir(), check=True,
                   capture_output=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})


def main_job(tree: Path, out: Path) -> tuple[float, float, float, dict[str, float], float]:
    """(wall seconds, seconds of the graph's timed runs (the saved run totals), of the user's
    call timed between them, the steps `--timings` printed: label -> seconds, and the graph's
    timed runs as each run's wall time, read to read: the saved run_noise, else the totals) of
    the default `pyfxprof profile` on `tree`. The totals lose the graph's time between its
    nodes when the (Python outside the graph) row is resolved (it goes to the row, and
    graph_only does not restore it); the walls keep it, the same on every tree."""
    timings = (tree / "pyfxprof" / "run" / "wall_clock.py").exists()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pyfxprof", "profile", "--save", str(out)]
                          + (["--timings"] if timings else []), cwd=tempfile.gettempdir(),
                          check=True, capture_output=True, text=True,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
    wall = time.perf_counter() - started
    read = ("import json, pyfxprof; from pyfxprof.data.outside_graph import graph_only; "
            f"p = pyfxprof.load({str(out)!r}); "
            "walls = None if p.run_noise is None else int(p.run_noise[:, 3].sum()); "
            "print(json.dumps([int(graph_only(p).run_totals.sum()), "
            "p.meta.get('wall_s', {}).get('call_timed', 0.0), walls]))")
    graph_ns, call_s, walls_ns = json.loads(subprocess.run(
        [sys.executable, "-c", read], cwd=tempfile.gettempdir(), check=True,
        capture_output=True, text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}).stdout)
    out.unlink()
    return (wall, graph_ns / 1e9, call_s, steps_printed(done.stderr),
            (graph_ns if walls_ns is None else walls_ns) / 1e9)


def steps_printed(stderr: str) -> dict[str, float]:
    """label -> seconds of the `--timings` table in `stderr`, its "total" last (empty without
    a table)."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("wall time")), None)
    if start is None:
        return {}
    steps = {}
    for line in lines[start + 1:]:
        if line.strip().startswith("total"):
            steps["total"] = float(line.split()[1])
            break
        label, _, value = line.strip().rpartition("  ")
        steps[label.strip()] = float(value)
    return steps


def print_main_job(tree: str, runs: list, torch_s: float) -> None:
    """The main job's figures on `tree` (main_job's tuples), medians (min..max); `torch_s`:
    the median of `import torch` in the same tree."""
    walls, graph, call = ([run[k] for run in runs] for k in range(3))
    print(f"  default main job, {tree}: wall {summary(walls)} (- torch "
          f"{statistics.median(walls) - torch_s:+.2f}); timed work: graph's runs "
          f"{summary(graph)} (saved run totals), {summary([run[4] for run in runs])} (each "
          f"run's wall), your call's timing {summary(call)}")
    print(f"    outside the timed runs {summary([w - g - c for w, g, c, *_ in runs])}; "
          f"with your call's timing counted as outside {summary([w - g for w, g, *_ in runs])}")
    as_walls = [run[0] - run[4] - run[2] for run in runs]
    print(f"    outside the timed runs, runs as walls {summary(as_walls)}; with your call's "
          f"timing counted as outside {summary([run[0] - run[4] for run in runs])}")
    for label in runs[0][3]:
        print(f"    --timings {label:<56} {summary([run[3].get(label, 0.0) for run in runs])}")
    if "total" in runs[0][3]:  # the process's end (and its start, on a tree without the step)
        print(f"    {'in no --timings step (wall - total)':<66} "
              f"{summary([run[0] - run[3]['total'] for run in runs])}")


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} ({min(values):.2f}..{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", type=Path, help="an older source tree to compare with")
    parser.add_argument("--main-job", type=int, default=0, metavar="N",
                        help="also run the default `pyfxprof profile` N times per tree")
    args = parser.parse_args()
    loads = [os.getloadavg()]
    trees = {"this tree": ROOT} if args.before is None else {"before": args.before.resolve(),
                                                             "after": ROOT}
    with tempfile.TemporaryDirectory() as scratch:
        saved = str(Path(scratch) / "saved {tree}.json")
        for tree, path in trees.items():
            save_profile(Path(saved.format(tree=tree)), path)
        table = cases(saved)
        times = {(case, tree): [] for case in table for tree in trees}
        for _ in range(args.repeat):
            for case, arguments in table.items():
                for tree, path in trees.items():
                    times[case, tree].append(run_process(
                        [a.format(tree=tree) if a == saved else a for a in arguments], path))
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
    for tree, path in trees.items():
        if args.main_job:
            print(f"  default main job, {tree}: {model_calls(path)}")
    for tree, runs in jobs.items():
        if runs:
            print_main_job(tree, runs, statistics.median(times["import torch (baseline)", tree]))
    print(f"load average (1, 5, 15 min) at the start {loads[0]}, at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
