"""Scale: the time of each step on a 20,000-node profile (profile, save, load, table, advise,
`pyfxprof report`, HTML report, Chrome trace, speedscope) and peak RSS.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_scale.py [--nodes 20000] [--runs 50]
     [--chain] [--steps table report ...]

The profile is synthetic (benchmarks/bench_persist.py's ResNet-like table and lognormal
samples) unless --chain, which profiles a chain of --nodes ReLU modules (and times that).
`pyfxprof report` runs in a child process (its import included), the rest in this one.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyfxprof  # noqa: E402
from bench_persist import synthetic_profile  # noqa: E402
from pyfxprof.data.persist import load_profile  # noqa: E402

#: Runs `pyfxprof ARGS` and prints its peak RSS (VmHWM) on stderr.
_CHILD = ("import atexit, sys\n"
          "atexit.register(lambda: print(open('/proc/self/status').read().split('VmHWM:')[1]"
          ".split()[0], file=sys.stderr))\n"
          "from pyfxprof.cli.main import main\nsys.exit(main(sys.argv[1:]))")


def chain_profile(nodes: int, runs: int):
    """profile() of a chain of ``nodes`` ReLU modules on a small tensor."""
    import torch
    model = torch.nn.Sequential(*[torch.nn.ReLU() for _ in range(nodes)])
    return pyfxprof.profile(model, (torch.randn(4, 4),), runs=runs, warmup=1, progress=False)


def report_in_child(path: Path) -> float:
    """Run `pyfxprof report PATH` in a child process; its peak RSS in MiB."""
    child = subprocess.run([sys.executable, "-c", _CHILD, "report", str(path)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           check=True)
    return int(child.stderr.split()[-1]) / 1024


def steps(profile, folder: Path, runs: int) -> dict:
    """Each step's callable (the profile already built)."""
    saved = folder / "p.json.gz"

    def quiet(function):
        def run():
            with redirect_stdout(io.StringIO()):
                return function()
        return run

    return {
        "save": lambda: profile.save(saved),
        "load": lambda: load_profile(saved),
        "table": lambda: profile.table(),
        "advise": lambda: str(profile.advise()),
        "report": quiet(lambda: report_in_child(saved)),
        "html": lambda: profile.export_html(folder / "r.html"),
        "chrome_trace": lambda: profile.export_chrome_trace(folder / "t.json",
                                                            runs=range(min(runs, 50))),
        "speedscope": lambda: profile.export_speedscope(folder / "s.speedscope.json"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--chain", action="store_true", help="profile a chain of ReLU modules")
    parser.add_argument("--steps", nargs="+", default=None, help="only these steps")
    args = parser.parse_args()
    print(f"pyfxprof {pyfxprof.__file__}, load {os.getloadavg()[0]:.2f}")
    start = time.perf_counter()
    profile = (chain_profile(args.nodes, args.runs) if args.chain
               else synthetic_profile(args.runs, args.nodes))
    built = "profile()" if args.chain else "synthetic profile built"
    print(f"{profile.n_nodes:,} nodes x {profile.n_runs} runs; {built}: "
          f"{time.perf_counter() - start:.2f} s")
    with tempfile.TemporaryDirectory() as folder:
        for name, step in steps(profile, Path(folder), args.runs).items():
            needs_file = {"load", "report"} & set(args.steps or ())
            if args.steps and name not in args.steps and not (name == "save" and needs_file):
                continue
            start = time.perf_counter()
            result = step()
            seconds = time.perf_counter() - start
            extra = f" (peak RSS {result:.0f} MiB)" if name == "report" else ""
            print(f"  {name}: {seconds:.2f} s{extra}", flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process {peak:.0f} MiB; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
