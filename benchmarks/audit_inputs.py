"""Audit of what pyfxprof does with hostile or mistaken input (the kinds of cases of issues 27
and 37): mutated saved profiles, bad CLI and API arguments, output targets (links, planted
temporary names, devices, FIFOs, read-only directories, a full device), names with control
characters, peak memory per file size for padded files and gzip bombs and per endless input
(/dev/zero, a FIFO or stdin fed forever), and issue 37's wrong outputs and misleading messages.
Prints the counts: tracebacks, crashes (deaths by a signal), files clobbered, wrong outputs or
misleading messages, and tables of input -> peak RSS.

Run: PYTHONPATH=. .venv/bin/python benchmarks/audit_inputs.py [--only SECTION ...]
     [--mutations 3000] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import stat
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

COUNTS = {"cases": 0, "tracebacks": 0, "crashes": 0, "clobbered": 0, "wrong": 0}


def child_env() -> dict:
    return dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'benchmarks'}")


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


def run_child(argv: list[str], timeout: float = 300, cwd=None,
              stdin=subprocess.DEVNULL) -> dict:
    """Run ``argv``: its exit status (negative: the signal), seconds, stderr, and peak RSS in
    MiB when it printed one (see _PYFXPROF)."""
    start = time.perf_counter()
    try:
        child = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=child_env(), cwd=cwd, stdin=stdin, timeout=timeout)
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
    count = max(1, validate.value_cap(size) // per - 2000)
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
    sizes = (1 << 20, 8 << 20) if quick else (1 << 20, 8 << 20, 32 << 20)
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


#: Feeders writing forever (until their reader goes): zeros, "{", gzip members of zeros.
_FEEDERS = {
    "zeros": "import sys\nb = bytes(1 << 16)\nwhile True: sys.stdout.buffer.write(b)",
    "braces": "import sys\nb = b'{' * (1 << 16)\nwhile True: sys.stdout.buffer.write(b)",
    "gzip": "import gzip, sys\nb = gzip.compress(bytes(1 << 20))\n"
            "while True: sys.stdout.buffer.write(b)"}


def _feeder(kind: str, into=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _FEEDERS[kind]], stdout=into,
                            stderr=subprocess.DEVNULL)


def _stop(feeder: subprocess.Popen) -> None:
    """End a feeder this audit started (by its own process object)."""
    feeder.kill()
    feeder.wait()


def audit_streams(folder: Path, quick: bool) -> None:
    """`pyfxprof report` of inputs with no size to trust (issue 37): /dev/zero, a FIFO fed
    forever, stdin fed forever (plain and gzip): each refused in one line at the cap; its
    peak RSS and time."""
    from pyfxprof.data.files import MAX_FILE_BYTES
    print(f"\n(cap {MAX_FILE_BYTES >> 20} MiB read, and as much decompressed)")
    print("| input | outcome | peak RSS | seconds |\n|---|---|---:|---:|")
    audit_cases.base_profile().save(folder / "base.json")
    cases = [("a saved profile (the baseline)", folder / "base.json", None, None),
             ("/dev/zero (character device, stat size 0)", "/dev/zero", None, None)]
    for kind in ("zeros", "braces", "gzip"):
        cases.append((f"FIFO fed forever ({kind})", folder / f"fifo-{kind}", kind, "fifo"))
        cases.append((f"stdin fed forever ({kind})", "/dev/stdin", kind, "stdin"))
    for what, path, kind, how in cases:
        feeder = None
        if how == "fifo":
            os.mkfifo(path)
            feeder = subprocess.Popen(["sh", "-c", f'exec "$0" -c "$1" > "$2"', sys.executable,
                                       _FEEDERS[kind], str(path)], stderr=subprocess.DEVNULL)
        elif how == "stdin":
            feeder = _feeder(kind)
        try:
            result = run_child(pyfxprof_argv("report", path), timeout=120,
                               stdin=feeder.stdout if how == "stdin" else subprocess.DEVNULL)
        finally:
            if feeder is not None:
                _stop(feeder)
        judge(f"report of {what}", result)
        lines = result["stderr"].strip().splitlines()
        outcome = ("loaded" if result["rc"] == 0 else "refused in one line" if len(lines) == 1
                   else f"{len(lines)} lines")
        print(f"| {what} | {outcome} | {result['rss_mib']:.0f} MiB | {result['seconds']:.1f} |",
              flush=True)


# ---- command line -----------------------------------------------------------------------------

#: Options of a quick `pyfxprof profile` of audit_cases.Block.
PROFILE = ["profile", "audit_cases:Block", "--runs", "3", "--warmup", "1"]
INPUT = ["--input", "2x3x8x8"]


def cli_cases(folder: Path) -> list[list[str]]:
    """Bad arguments and bad files for `pyfxprof report`, `diff` and `profile`."""
    base = str(folder / "base.json")
    (folder / "dir").mkdir()
    (folder / "garbage.json").write_bytes(b"\x00\xff{not json")
    (folder / "existing").write_text("keep me")
    gzip_bomb(folder / "bomb.json.gz", 1)
    report = [["report", folder / "missing.json"], ["report", folder / "dir"],
              ["report", folder / "garbage.json"], ["report", folder / "bomb.json.gz"],
              ["report", base, "--top", "-1"], ["report", base, "--top", "abc"],
              ["report", base, "--sort", "zz"], ["report", base, "--depth", "2"],
              ["report", base, "--rank-traces", folder / "traces"],
              ["report", base, "--chrome-trace", folder / "nowhere" / "t.json"],
              ["report", base, "--csv", folder / "dir"], ["report", base, "--tail", "2"],
              ["report", base, "--tail", "nan"], ["report", base, "--group-by", "input_shape"],
              ["report", base, "--exclude-preempted", "--latency"],
              ["diff", base, folder / "missing.json"], ["diff", base, folder / "garbage.json"]]
    profile = [[*PROFILE, "--input", "99999999999999999999999x16"],
               [*PROFILE, "--input", "0x3x8x8"], [*PROFILE, "--input", "abc"],
               [*PROFILE, "--input", "2x3x8x8:complex999"], [*PROFILE, *INPUT, "--threads",
                                                              "100000"],
               [*PROFILE, *INPUT, "--threads", "0"], [*PROFILE, *INPUT, "--runs", "-1"],
               [*PROFILE, *INPUT, "--warmup", "-5"], [*PROFILE, *INPUT, "--device", "foo"],
               [*PROFILE, *INPUT, "--device", "meta"], [*PROFILE, *INPUT, "--device", "cuda:99"],
               ["profile", "nonexistent.module:Thing", *INPUT],
               ["profile", "audit_cases:VALUES", *INPUT],
               [*PROFILE, *INPUT, "--ranks-out", folder / "existing"],
               [*PROFILE, *INPUT, "--gather-timeout", "-3"],
               [*PROFILE, "--input", "2x3x9x9"],
               ["profile", "audit_cases:ParameterFree", "--input", "2x4", "--runs", "2",
                "--backward"]]
    return [[str(a) for a in case] for case in report + profile]


def audit_cli(folder: Path, quick: bool) -> None:
    """Each bad command line in a child `pyfxprof`: a one-line error, never a traceback."""
    audit_cases.base_profile().save(folder / "base.json")
    cases = cli_cases(folder)
    outcomes = {}
    for argv in cases[:12] + cases[-4:] if quick else cases:
        result = run_child(pyfxprof_argv(*argv), cwd=folder)
        judge("pyfxprof " + " ".join(argv), result)
        lines = [line for line in result["stderr"].splitlines() if line.strip()]
        kind = ("exit 0" if result["rc"] == 0 else "one-line error" if len(lines) == 1
                else "usage error" if lines and lines[0].startswith("usage:")
                else f"{len(lines)} lines")
        outcomes[kind] = outcomes.get(kind, 0) + 1
        if kind not in ("one-line error", "usage error"):  # exit 0: was the line valid?
            print(f"  {kind}: pyfxprof {' '.join(argv)}: {lines[-3:]}")
    print(f"  {sum(outcomes.values())} command lines: {outcomes}")


# ---- in-process cases, run in a child so that a crash is seen -------------------------------

def attempt(what: str, call, *errors) -> str:
    """Run ``call``: "ok", "refused" (a one-line PyfxprofError), or count a traceback (any other
    exception, or an error of several lines)."""
    from pyfxprof.errors import PyfxprofError
    COUNTS["cases"] += 1
    try:
        call()
        return "ok"
    except PyfxprofError as error:
        if "\n" not in str(error):
            return "refused"
        problem = f"a PyfxprofError of several lines: {str(error)[:120]!r}"
    except Exception as error:  # noqa: BLE001 - what the audit counts
        problem = f"{type(error).__name__}: {str(error)[:120]!r}"
    COUNTS["tracebacks"] += 1
    print(f"  TRACEBACK: {what}: {problem}", flush=True)
    return "traceback"


def render_everything(path: Path, folder: Path) -> None:
    """`pyfxprof report --tree` of ``path`` writing every export, and the API's views."""
    import contextlib
    import io

    from pyfxprof.cli.main import main
    from pyfxprof.data.persist import load_profile
    profile = load_profile(path)
    exports = ["--html", folder / "r.html", "--chrome-trace", folder / "t.json", "--stacks",
               folder / "s.txt", "--flamegraph", folder / "f.svg", "--speedscope",
               folder / "x.speedscope.json", "--csv", folder / "n.csv"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["report", str(path), "--tree", *map(str, exports)])
    if code != 0 or any(c in out.getvalue() for c in "\x1b\x07\x9b"):
        raise AssertionError(f"report exit {code} or raw control characters: "
                             f"{out.getvalue()[-200:]!r}")
    str(profile.advise()), profile.table(group_by="module"), repr(profile)


def audit_mutations(folder: Path, quick: bool) -> None:
    """Mutated saved profiles: each refused in one line, or loaded and rendered everywhere."""
    from pyfxprof.data.persist import load_profile
    audit_cases.base_profile().save(folder / "base.json")
    base = (folder / "base.json").read_text()
    outcomes = {"ok": 0, "refused": 0, "traceback": 0}
    path = folder / "m.json"
    for text in audit_cases.mutated_texts(base, 300 if quick else MUTATIONS[0]):
        path.write_text(text, errors="surrogatepass")
        outcome = attempt("load", lambda: load_profile(path))
        if outcome == "ok":
            outcome = attempt(f"render of an accepted file {text[:0]}",
                              lambda: render_everything(path, folder))
        outcomes[outcome] += 1
    print(f"  {sum(outcomes.values())} mutated files: {outcomes['refused']} refused in one "
          f"line, {outcomes['ok']} loaded and rendered, {outcomes['traceback']} tracebacks")


def api_cases(folder: Path) -> dict:
    """Bad arguments for each public function and Profile method: description -> call."""
    import torch

    import pyfxprof
    model, x = audit_cases.Block().eval(), torch.randn(2, 3, 8, 8)
    prof = audit_cases.base_profile()
    cases = {f"load({value!r:.30})": (lambda v=value: pyfxprof.load(v))
             for value in (None, 5, b"{}", folder / "missing.json", folder, "")}
    bad = {"runs": (-1, 0, "x", 2**70, None), "warmup": (-1, "x", 1.5),
           "device": ("foo", "meta", 5, "cuda:99"), "mode": ("zz", None),
           "leaf_modules": (None, 5, ["x"]), "capture": ("zz",), "progress": ("x",),
           "granularity": ("zz",), "name": (5,), "profile_memory": ("x",)}
    for key, values in bad.items():
        for value in values:
            cases[f"profile({key}={value!r:.30})"] = (
                lambda k=key, v=value: pyfxprof.profile(model, (x,), **{"runs": 2, "warmup": 0,
                                                                         k: v}))
    cases.update({
        "profile(None)": lambda: pyfxprof.profile(None, (x,)),
        "profile(model, None)": lambda: pyfxprof.profile(model, None, runs=2),
        "profile(model, wrong shape)": lambda: pyfxprof.profile(model, (torch.randn(2, 5),)),
        "profile(torch.jit.script)": lambda: pyfxprof.profile(torch.jit.script(model), (x,)),
        "profile(torch.jit.trace)": lambda: pyfxprof.profile(torch.jit.trace(model, (x,)),
                                                             (x,)),
        "fuse_conv_bn(None)": lambda: pyfxprof.fuse_conv_bn(None),
        "fuse_conv_bn(5)": lambda: pyfxprof.fuse_conv_bn(5),
        "diff(prof, None)": lambda: pyfxprof.diff(prof, None),
        "diff(None, prof)": lambda: pyfxprof.diff(None, prof)})
    cases.update(_method_cases(prof, folder))
    cases.update(audit_cases.round4_api_cases(folder))
    return cases


def _method_cases(prof, folder: Path) -> dict:
    """Bad arguments for the Profile's views and exports."""
    calls = {"table": {"sort_by": ("zz", None, 5), "top": (-1, "x", 1.5, 2**70),
                       "group_by": ("zz", 5), "depth": (-1, "x"), "columns": (["zz"], 5),
                       "width": (-5, "x"), "row_limit": (-1, "x")},
             "tree": {"max_depth": (-1, "x", 1.5)},
             "export_flamegraph": {"metric": ("zz", None), "by": ("zz",)},
             "export_stacks": {"metric": ("zz",), "by": ("zz", 5)},
             "export_speedscope": {"metric": ("zz",), "run": (99, -1, "x")},
             "export_chrome_trace": {"runs": ([99], "x", [-1], [1.5]), "max_runs": (-1, "x")},
             "export_html": {"top": (-1, "x"), "metric": ("zz",)},
             "advise": {"rules": (5, ["zz"])}}
    suffix = {"export_flamegraph": ".svg", "export_stacks": ".txt", "export_html": ".html",
              "export_speedscope": ".speedscope.json", "export_chrome_trace": ".json"}
    cases = {}
    for method, arguments in calls.items():
        for key, values in arguments.items():
            for value in values:
                where = () if method not in suffix else (folder / f"out{suffix[method]}",)
                cases[f"Profile.{method}({key}={value!r:.30})"] = (
                    lambda m=method, k=key, v=value, w=where: str(getattr(prof, m)(*w, **{k: v})))
    cases["Profile.export(path, format='zz')"] = lambda: prof.export(folder / "a.json", "zz")
    cases["Profile.export('x.unknown')"] = lambda: prof.export(folder / "a.unknown")
    cases["Profile.save(None)"] = lambda: prof.save(None)
    cases["Profile.save(directory)"] = lambda: prof.save(folder)
    return cases


def audit_api(folder: Path, quick: bool) -> None:
    """Each bad API call: it works, or raises a one-line PyfxprofError; anything else (a raw
    TypeError, ValueError, AttributeError ...) is counted as a traceback."""
    outcomes = {"ok": 0, "refused": 0, "traceback": 0}
    for what, call in api_cases(folder).items():
        outcomes[attempt(what, call)] += 1
    print(f"  {sum(outcomes.values())} API calls: {outcomes['refused']} refused in one line, "
          f"{outcomes['ok']} accepted, {outcomes['traceback']} raw exceptions")
    misleading = 0
    cases = audit_cases.round4_api_cases(folder)
    for what, (must, must_not) in audit_cases.MESSAGES.items():
        message = _message_of(cases[what])
        if must not in message or must_not in message:
            misleading += 1
            COUNTS["wrong"] += 1
            print(f"  MISLEADING: {what}: {message[:160]!r}")
    print(f"  {len(audit_cases.MESSAGES)} messages of issue 37 checked: {misleading} misleading")


def _message_of(call) -> str:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the message is what is judged
        return str(error)
    return "(no error)"


def audit_behaviour(folder: Path, quick: bool) -> None:
    """What issue 37 found wrong (global RNG advanced, dataclass outputs under backward=True,
    the eager-vs-compiled diff, torch.compile options, a trace's runs): each right, or a
    wrong output counted."""
    wrong = 0
    checks = audit_cases.round4_behaviour(folder)
    for what, check in checks.items():
        problem = [None]
        outcome = attempt(what, lambda: problem.__setitem__(0, check()))
        if outcome == "refused":  # a one-line refusal of what should work is wrong too
            problem[0] = "refused"
        if outcome != "traceback" and problem[0]:
            wrong += 1
            COUNTS["wrong"] += 1
            print(f"  WRONG: {what}: {problem[0]}")
    print(f"  {len(checks)} behaviours: {wrong} wrong")


def writers(prof) -> dict:
    """Every way pyfxprof writes a file: suffix -> writer(path)."""
    return {".json": prof.save, ".json.gz": prof.save, ".html": prof.export_html,
            ".trace.json": prof.export_chrome_trace, ".trace.json.gz": prof.export_chrome_trace,
            ".txt": prof.export_stacks, ".svg": prof.export_flamegraph,
            ".speedscope.json": prof.export_speedscope, ".csv": lambda p: prof.export(p, "csv"),
            ".png": lambda p: prof.export(p, "plot")}


@contextlib.contextmanager
def read_only_folder(folder: Path):
    """A folder on a tmpfs remounted read-only holding ``kept`` (root bypasses permission
    bits; a read-only mount it cannot), or None when mounting is not allowed."""
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        yield None
        return
    try:
        (folder / "kept").write_text("keep me")
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def target_cases(folder: Path, suffix: str, read_only) -> list[tuple]:
    """(what, target path, check after the write: the clobbered file's name or None)."""
    def planted():
        (folder / "victim").write_text("victim")
        os.symlink(folder / "victim", folder / f"out{suffix}.partial")
        return lambda: None if (folder / "victim").read_text() == "victim" else "victim"

    def linked():
        (folder / f"real{suffix}").write_text("old")
        os.symlink(folder / f"real{suffix}", folder / f"link{suffix}")
        return lambda: None if (folder / f"link{suffix}").is_symlink() and (
            folder / f"real{suffix}").read_bytes() != b"old" else "symlink"

    def device(minor: int, name: str):
        os.mknod(folder / name, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        return lambda: None if stat.S_ISCHR(os.lstat(folder / name).st_mode) else name

    cases = [("planted .partial symlink", f"out{suffix}", planted),
             ("symlink to a file", f"link{suffix}", linked),
             ("character device (copy of /dev/null)", "null", lambda: device(3, "null")),
             ("full device (copy of /dev/full)", "full", lambda: device(7, "full")),
             ("directory", "dir", lambda: (folder / "dir").mkdir() or (lambda: None)),
             ("missing folder", f"nowhere/x{suffix}", lambda: lambda: None),
             ("control characters in the name", f"a\x1b[31m\x07{suffix}", lambda: lambda: None)]
    if read_only is not None:
        kept = lambda: None if (read_only / "kept").read_text() == "keep me" else "kept"
        cases += [("read-only existing file", read_only / "kept", lambda: kept),
                  ("new file in a read-only folder", read_only / f"new{suffix}", lambda: kept)]
    return cases


def fifo_case(folder: Path, write) -> tuple[str, str | None]:
    """Write into a FIFO read by a thread: the outcome, and "fifo" if it was replaced."""
    import threading
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    outcome = attempt("write into a FIFO", lambda: write(fifo))
    reader.join(10)
    replaced = None if stat.S_ISFIFO(os.lstat(fifo).st_mode) and received and received[0] \
        else "fifo"
    fifo.unlink()
    return outcome, replaced


def audit_outputs(folder: Path, quick: bool) -> None:
    """Every writer onto every kind of target: written, or refused in one line; never a file
    clobbered (a planted link followed, a device or link replaced, a read-only file changed)."""
    prof = audit_cases.base_profile()
    outcomes = {"ok": 0, "refused": 0, "traceback": 0}
    with read_only_folder(folder / "ro") as read_only:
        if read_only is None:
            print("  (no read-only cases: mounting a tmpfs is not allowed here)")
        for suffix, write in writers(prof).items():
            case_folder = Path(tempfile.mkdtemp(dir=folder))
            for what, target, prepare in target_cases(case_folder, suffix, read_only):
                check = prepare()
                outcome = attempt(f"{suffix} onto {what}",
                                  lambda: write(case_folder / target))
                outcomes[outcome] += 1
                clobbered = check()
                if clobbered:
                    COUNTS["clobbered"] += 1
                    print(f"  CLOBBERED {clobbered}: {suffix} written onto {what}")
            outcome, replaced = fifo_case(case_folder, write)
            outcomes[outcome] += 1
            if replaced:
                COUNTS["clobbered"] += 1
                print(f"  CLOBBERED fifo: {suffix} written into a FIFO")
    print(f"  {sum(outcomes.values())} writes: {outcomes['ok']} written, {outcomes['refused']} "
          f"refused in one line, {outcomes['traceback']} tracebacks")


def audit_names(folder: Path, quick: bool) -> None:
    """A module named with control characters: no raw control character in any text, SVG or
    HTML output, and the SVG parses as XML."""
    import contextlib
    import io
    from xml.etree import ElementTree

    import torch

    import pyfxprof
    from pyfxprof.cli.main import main
    prof = pyfxprof.profile(audit_cases.Hostile(), (torch.randn(2, 4),), runs=3, warmup=1,
                            progress=False)
    prof.save(folder / "hostile.json")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        main(["report", str(folder / "hostile.json"), "--tree", "--html", str(folder / "r.html"),
              "--flamegraph", str(folder / "f.svg"), "--stacks", str(folder / "s.txt"),
              "--csv", str(folder / "n.csv")])
    texts = {"report": out.getvalue(), "table": prof.table(), "tree": prof.tree(),
             "advice": str(prof.advise()), "repr": repr(prof)}
    texts.update({name: (folder / name).read_text() for name in ("r.html", "f.svg", "s.txt")})
    unsafe = [name for name, text in texts.items() if any(c in text for c in "\x1b\x07\x9b")]
    COUNTS["cases"] += len(texts)
    for name in unsafe:
        COUNTS["tracebacks"] += 1  # counted with the failures
        print(f"  UNSAFE: raw control characters in the {name}")
    ElementTree.fromstring((folder / "f.svg").read_bytes())
    print(f"  {len(texts)} outputs of a module named {audit_cases.HOSTILE_NAME!r}: "
          f"{len(unsafe)} with raw control characters; the SVG parses as XML")


#: Mutated files to try (--mutations).
MUTATIONS = [3000]


# ---- main -------------------------------------------------------------------------------------

IN_CHILD = {"mutations": audit_mutations, "api": audit_api, "outputs": audit_outputs,
            "names": audit_names, "behaviour": audit_behaviour}
SECTIONS = {"memory": audit_memory, "streams": audit_streams, "cli": audit_cli, **IN_CHILD}


def in_child(name: str, quick: bool) -> None:
    """Run section ``name`` in a child process: its printed lines, and its counts added to
    ours (a death by a signal is a crash)."""
    argv = [sys.executable, __file__, "--child", name, "--mutations", str(MUTATIONS[0])]
    child = subprocess.run(argv + ["--quick"] * quick, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=child_env())
    lines = child.stdout.rstrip().splitlines()
    if child.returncode < 0 or not lines or not lines[-1].startswith("COUNTS "):
        COUNTS["crashes"] += 1
        print(f"  CRASH of section {name}: exit {child.returncode}")
        print("\n".join(lines[-20:]))
        return
    print("\n".join(lines[:-1]), flush=True)
    for key, value in json.loads(lines[-1][len("COUNTS "):]).items():
        COUNTS[key] += value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(SECTIONS), default=list(SECTIONS))
    parser.add_argument("--quick", action="store_true", help="fewer and smaller cases")
    parser.add_argument("--mutations", type=int, default=MUTATIONS[0])
    parser.add_argument("--child", choices=sorted(IN_CHILD), help=argparse.SUPPRESS)
    args = parser.parse_args()
    MUTATIONS[0] = args.mutations
    with tempfile.TemporaryDirectory() as folder:
        if args.child:
            IN_CHILD[args.child](Path(folder), args.quick)
            print("COUNTS " + json.dumps(COUNTS))
            return
        print(f"load {os.getloadavg()[0]:.2f}")
        for name in args.only:
            print(f"\n## {name}", flush=True)
            if name in IN_CHILD:
                in_child(name, args.quick)
            else:
                SECTIONS[name](Path(folder), args.quick)
    print(f"\n{COUNTS['cases']} cases: {COUNTS['tracebacks']} tracebacks, {COUNTS['crashes']} "
          f"crashes, {COUNTS['clobbered']} files clobbered, {COUNTS['wrong']} wrong outputs or "
          f"misleading messages (load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
