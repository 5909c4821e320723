"""Audit of what pyfxprof does with hostile or mistaken input (the kinds of cases of issue 27):
mutated saved profiles, bad CLI and API arguments, output targets (links, planted temporary
names, devices, FIFOs, read-only directories, a full device), names with control characters,
and peak memory per file size for padded files and gzip bombs. Prints the counts: tracebacks,
crashes (deaths by a signal), files clobbered, and a table of file size -> peak RSS.

Run: PYTHONPATH=. .venv/bin/python benchmarks/audit_inputs.py [--only SECTION ...]
     [--mutations 3000] [--quick]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import audit_cases  # noqa: E402

COUNTS = {"cases": 0, "tracebacks": 0, "crashes": 0, "clobbered": 0}


def child_env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT))


#: Runs `pyfxprof ARGS` and prints its peak RSS (VmHWM, which exec resets: a forked child's
#: ru_maxrss would start at its parent's) as the last line of stderr.
_PYFXPROF = """
import atexit, sys
def peak():
    status = open("/proc/self/status").read()
    print("peak_rss_kib=" + status.split("VmHWM:")[1].split()[0], file=sys.stderr)
atexit.register(peak)
from pyfxprof.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def pyfxprof_argv(*args) -> list[str]:
    return [sys.executable, "-c", _PYFXPROF, *map(str, args)]


def run_child(argv: list[str], timeout: float = 300, cwd=None) -> dict:
    """Run ``argv``: its exit status (negative: the signal), seconds, stderr, and peak RSS in
    MiB when it printed one (see _PYFXPROF)."""
    start = time.perf_counter()
    try:
        child = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=child_env(), cwd=cwd, stdin=subprocess.DEVNULL,
                               timeout=timeout)
        rc, stderr = child.returncode, child.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, stderr = -9, "timed out"
    lines = stderr.rstrip().splitlines()
    peak = (int(lines.pop().split("=")[1]) / 1024 if lines and lines[-1].startswith("peak_rss")
            else float("nan"))
    return {"rc": rc, "rss_mib": peak, "seconds": time.perf_counter() - start,
            "stderr": "\n".join(lines)}


def judge(what: str, result: dict) -> None:
    """Count a child's traceback or crash (death by a signal), printing the case when bad."""
    COUNTS["cases"] += 1
    if result["rc"] < 0:
        COUNTS["crashes"] += 1
        print(f"  CRASH (signal {-result['rc']}): {what}")
    elif "Traceback (most recent call last)" in result["stderr"]:
        COUNTS["tracebacks"] += 1
        print(f"  TRACEBACK: {what}: {result['stderr'].strip().splitlines()[-1][:160]}")


# ---- memory per file size ---------------------------------------------------------------------

def padded(base: str, padding: str, count: int, filler: int = 0) -> str:
    """``base`` (a saved profile's JSON) with ``count`` copies of ``padding`` in meta, and a
    string of ``filler`` bytes beside them."""
    pad = "[" + ",".join([padding] * count) + "]"
    return base.replace('"meta":{', f'"meta":{{"filler":"{"x" * filler}","pad":{pad},', 1)


def densest_accepted(base: str, padding: str, size: int) -> str:
    """A file of about ``size`` bytes holding as many ``padding`` values as the value cap
    allows for its size (the rest a string): the worst accepted case."""
    from pyfxprof.data import validate
    per = validate.element_bound("," + padding)
    count = max(1, size // validate.MIN_BYTES_PER_VALUE // per - 2000)
    text = padded(base, padding, count)
    return padded(base, padding, count, max(0, size - len(text)))


def gzip_bomb(path: Path, gib: int) -> None:
    """``gib`` GiB of spaces after a JSON opening, gzip-compressed (a few MB on disk)."""
    chunk, packer = b" " * (64 << 20), zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as out:
        out.write(packer.compress(b'{"format": "pyfxprof-profile", "pad": "'))
        for _ in range(gib * 16):
            out.write(packer.compress(chunk))
        out.write(packer.flush())


def memory_cases(folder: Path, quick: bool) -> list[tuple[str, Path]]:
    """(description, file) of padded profiles, densest accepted ones and gzip bombs."""
    base = (folder / "base.json").read_text()
    cases = [("base profile", folder / "base.json")]
    sizes = (1 << 20, 8 << 20) if quick else (1 << 20, 8 << 20, 32 << 20, 128 << 20)
    for padding in ("{}", "[]", "0"):
        for size in sizes:
            for kind, text in (("padded", padded(base, padding, size // (len(padding) + 1))),
                               ("densest accepted", densest_accepted(base, padding, size))):
                path = folder / f"{kind[0]}{len(cases)}.json"
                path.write_text(text)
                cases.append((f"{kind} with {padding}", path))
    big = padded(base, "{}", (250 << 20) // 3)
    (folder / "pad250.json.gz").write_bytes(gzip.compress(big.encode(), 6))
    cases.append(("250 MiB of {} gzip-compressed", folder / "pad250.json.gz"))
    for gib in (1,) if quick else (1, 4):
        gzip_bomb(folder / f"bomb{gib}.json.gz", gib)
        cases.append((f"gzip bomb of {gib} GiB", folder / f"bomb{gib}.json.gz"))
    return cases


def decoded_size(path: Path) -> int:
    if not path.name.endswith(".gz"):
        return path.stat().st_size
    with gzip.open(path) as stream:
        return sum(len(piece) for piece in iter(lambda: stream.read(64 << 20), b""))


def audit_memory(folder: Path, quick: bool) -> None:
    """`pyfxprof report FILE` of each memory case: file and decoded sizes, outcome, peak RSS
    over the base profile's, as a multiple of the decoded size."""
    audit_cases.base_profile().save(folder / "base.json")
    cases = memory_cases(folder, quick)
    print("\n| file | on disk | decoded | outcome | peak RSS | over base | / decoded |")
    print("|---|---:|---:|---|---:|---:|---:|")
    baseline = None
    for what, path in cases:
        result = run_child(pyfxprof_argv("report", path))
        judge(f"report of {what}", result)
        baseline = result["rss_mib"] if baseline is None else baseline
        over, size = result["rss_mib"] - baseline, decoded_size(path)
        outcome = "loaded" if result["rc"] == 0 else "refused"
        print(f"| {what} | {path.stat().st_size / 2**20:.2f} MiB | {size / 2**20:.1f} MiB | "
              f"{outcome} | {result['rss_mib']:.0f} MiB | {over:+.0f} MiB | "
              f"{over * 2**20 / size:.1f}x |", flush=True)
        path.unlink()


# ---- main -------------------------------------------------------------------------------------

SECTIONS = {"memory": audit_memory}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(SECTIONS), default=sorted(SECTIONS))
    parser.add_argument("--quick", action="store_true", help="fewer and smaller cases")
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only:
            print(f"\n## {name}")
            SECTIONS[name](Path(folder), args.quick)
    print(f"\n{COUNTS['cases']} cases: {COUNTS['tracebacks']} tracebacks, {COUNTS['crashes']} "
          f"crashes, {COUNTS['clobbered']} files clobbered (load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
