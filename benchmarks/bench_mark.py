"""Cost of one pyfxprof._C.mark() call next to an empty C call, a builtin, perf_counter_ns and
time.time, and the record rate from 1, 2 and 4 Python threads.

Run: .venv/bin/python benchmarks/bench_mark.py [--calls N] [--repeats R]
"""

import argparse
import statistics
import threading
import time
import timeit

from machine import describe_machine
from pyfxprof import _C

CANDIDATES = [
    ("pyfxprof._C.mark(1)", "mark(1)", {"mark": _C.mark}),
    ("mark via pybind11", "mark(1)", {"mark": _C._mark_pybind11}),
    ("empty C call _noop(1)", "noop(1)", {"noop": _C._noop}),
    ("builtin abs(1)", "f(1)", {"f": abs}),
    ("time.perf_counter_ns()", "f()", {"f": time.perf_counter_ns}),
    ("time.time()", "f()", {"f": time.time}),
    ("empty loop (subtracted)", "pass", {}),
]


def per_call_ns(stmt: str, env: dict, calls: int, repeats: int) -> float:
    """Median over repeats of ns per call (the buffer is drained between repeats)."""
    results = []
    for _ in range(repeats):
        results.append(timeit.timeit(stmt, globals=env, number=calls) / calls * 1e9)
        _C.drain()
    return statistics.median(results)


def threaded_rate(threads: int, marks_per_thread: int) -> float:
    """Marks per second recorded by `threads` Python threads marking concurrently."""
    def work():
        mark = _C.mark
        for i in range(marks_per_thread):
            mark(i)
    workers = [threading.Thread(target=work) for _ in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - start
    recorded = len(_C.drain()["id"])
    assert recorded == threads * marks_per_thread, "records were lost"
    return recorded / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    print(describe_machine())
    print(f"ns per call, median of {args.repeats} repeats of {args.calls:,} calls, "
          "loop cost subtracted")
    raw = {name: per_call_ns(stmt, env, args.calls, args.repeats)
           for name, stmt, env in CANDIDATES}
    loop = raw.pop("empty loop (subtracted)")
    mark = raw["pyfxprof._C.mark(1)"] - loop
    print(f"{'call':<26}{'ns/call':>9}{'vs mark':>9}{'mark minus this':>17}")
    for name, value in raw.items():
        cost = value - loop
        print(f"{name:<26}{cost:>9.1f}{cost / mark:>8.2f}x{mark - cost:>14.1f} ns")
    print("\nmarks/s from Python threads (the GIL serialises the callers)")
    for threads in (1, 2, 4):
        print(f"  {threads} thread(s): {threaded_rate(threads, 500_000) / 1e6:6.1f} M marks/s")


if __name__ == "__main__":
    main()
