"""What noting a call's sizes costs the Profiler loop per call: Dynamo's code calls the
instrumented graph through a relay (capture/dynamo_frame.py, Relay), which, for a graph with
dynamic sizes, appends the values of its size inputs to a list at each call (the shapes each
call ran at, for Profile.replay). Timed here: a relay call that notes (one size input, and
four) against one that does not (and against the relay before noting existed, without the
check per call), on the same do-nothing runner and flat inputs, in blocks
interleaved in one process (the order alternating), the list emptied between blocks as a
window's close empties it.

Run: .venv/bin/python benchmarks/bench_relay_note.py [--blocks B] [--calls N]
"""

import argparse
import time

import numpy as np
from machine import describe_machine

from pyfxprof.capture.dynamo_frame import Relay


class Unchecked:
    """The relay as it was before sizes were noted: no check of `noted` per call."""

    def __init__(self, runner) -> None:
        self.runner, self.noted = runner, None

    def __call__(self, *flat):
        return self.runner(flat)


def relay(positions: list[int] | None) -> Relay:
    made = Relay(lambda flat: None)
    if positions:
        import operator
        made.pick, made.noted = operator.itemgetter(*positions), []
    return made


def block(made: Relay, flat: tuple, calls: int) -> float:
    """ns per call of `calls` relay calls."""
    started = time.perf_counter_ns()
    for _ in range(calls):
        made(*flat)
    elapsed = time.perf_counter_ns() - started
    if made.noted is not None:
        made.noted.clear()
    return elapsed / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=301)
    parser.add_argument("--calls", type=int, default=2_000)
    options = parser.parse_args()
    print(describe_machine())
    flat = (object(), object(), 8, object(), 8, 9, 9, object())  # tensors and sizes
    kinds = {"before (no check)": Unchecked(lambda flat: None),
             "no sizes noted": relay(None), "one size noted": relay([2]),
             "four sizes noted": relay([2, 4, 5, 6])}
    times: dict[str, list[float]] = {name: [] for name in kinds}
    for k in range(options.blocks):
        order = list(kinds) if k % 2 == 0 else list(reversed(kinds))
        for name in order:
            times[name].append(block(kinds[name], flat, options.calls))
    base = np.asarray(times["before (no check)"])
    for name, found in times.items():
        found_ = np.asarray(found)
        print(f"  {name:<18} {np.median(found_):6.1f} ns/call; beyond the unchecked relay: median of "
              f"block pairs {np.median(found_ - base):+6.1f} ns "
              f"(quartiles {np.percentile(found_ - base, 25):+.1f}, "
              f"{np.percentile(found_ - base, 75):+.1f})")
    print(describe_machine())


if __name__ == "__main__":
    main()
