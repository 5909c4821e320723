"""The way from ``pyfxprof.profile(model, ...)`` to the printed table, read off a run with a
``sys.settrace`` hook (docs/architecture.md, "The way from profile() to the table").

- The *walk*: the package's functions that run during
  ``profile(Net(), (x,), runs=2, warmup=1, progress=False).table()``, each in the order it
  first runs (a function run again, per node or per run, is not a new step), after one such
  call on another instance (imports done, nothing of this model cached).
- *On the way*: a step in the file of ``profile`` (run/runner.py) or of ``Profile.table``
  (views/report.py), a step those two files call directly (the nearest package frame below it
  is in one of them), and the decorators around ``profile`` (no package frame below them).
  What a step then calls inside its own stage is that stage's business, not the way.
- A *stop*: consecutive steps in one file. A *climb*: a stop in a file the way already left.

``python -m tests.test_walk`` prints the measured way (files, stops, climbs, and each stop's
functions), to update docs/architecture.md's list when the way changes.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pyfxprof
from tests.models import Net, net_input

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = str(ROOT / "pyfxprof") + "/"
DOC = ROOT / "docs" / "architecture.md"

#: At most this many files on the way (issue 35: 25 files, 50 stops, 14 climbs then).
MAX_FILES = 18
#: At most this many climbs: the driver (run/runner.py) returns once to build the Profile,
#: capture/model_state.py once for its contexts after its decorator, and views/report.py
#: after each data helper it reads (to_dataframe, statistics, units); two to spare, so one
#: more helper on the way is allowed but an interleaving like training's is not.
MAX_CLIMBS = 10


@dataclass(frozen=True)
class Walk:
    """The way's stops (file, its functions in order) and what they add up to."""

    stops: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def files(self) -> list[str]:
        """The files on the way, in the order the way first reaches them."""
        return list(dict.fromkeys(file for file, _ in self.stops))

    @property
    def climbs(self) -> int:
        return len(self.stops) - len(self.files)

    def summary(self) -> str:
        return f"{len(self.files)} files · {len(self.stops)} stops · {self.climbs} climbs"


def _relative(filename: str) -> str | None:
    return filename[len(PACKAGE):] if filename.startswith(PACKAGE) else None


def _spine() -> set[str]:
    """The files of profile() and of Profile.table (the function that serves it)."""
    from pyfxprof.data.profile import Profile
    return {_relative(str(Path(inspect.getsourcefile(inspect.unwrap(function))).resolve()))
            for function in (pyfxprof.profile, Profile.table)}


def _steps(call) -> list[tuple[str, str]]:
    """(file, function) of each package function on the way while `call()` runs, in the
    order each first runs."""
    spine, steps, seen = _spine(), [], set()

    def tracer(frame, event, arg):
        file = _relative(frame.f_code.co_filename)
        if event != "call" or file is None or frame.f_code.co_name == "<module>":
            return None
        below = frame.f_back
        while below is not None and _relative(below.f_code.co_filename) is None:
            below = below.f_back
        caller = None if below is None else _relative(below.f_code.co_filename)
        step = (file, frame.f_code.co_name)
        if (file in spine or caller is None or caller in spine) and step not in seen:
            seen.add(step)
            steps.append(step)
        return None

    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(None)
    return steps


@functools.cache
def measure() -> Walk:
    """The way of profile() to the table on tests.models.Net (see the module docstring)."""
    def profile_and_table(model):
        return pyfxprof.profile(model, (net_input(),), runs=2, warmup=1,
                                progress=False).table()
    profile_and_table(Net())  # imports and first-use work done, off the way
    model = Net()
    stops: list[tuple[str, list[str]]] = []
    for file, function in _steps(lambda: profile_and_table(model)):
        if stops and stops[-1][0] == file:
            stops[-1][1].append(function)
        else:
            stops.append((file, [function]))
    return Walk(tuple((file, tuple(functions)) for file, functions in stops))


def documented() -> tuple[list[str], str]:
    """(the files docs/architecture.md's way lists, in order; its summary line)."""
    text = DOC.read_text()
    section = text[text.index("## The way from profile() to the table"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    files = re.findall(r"^\d+\. `([^`]+)`", section, flags=re.MULTILINE)
    summary = re.search(r"^Measured: (.+?)\.?$", section, flags=re.MULTILINE)
    return files, summary.group(1) if summary else ""


def test_the_way_to_the_table_is_short_and_seldom_climbs():
    walk = measure()
    assert len(walk.files) <= MAX_FILES, walk.files
    assert walk.climbs <= MAX_CLIMBS, walk.stops
    assert walk.files[:3] == ["capture/tracing.py", "capture/model_state.py", "run/runner.py"]


def test_training_and_compiled_pieces_are_off_the_forward_way():
    files = measure().files
    assert not [file for file in files if "training" in file or "compiled" in file], files


def test_docs_show_the_way_as_measured():
    walk, (files, summary) = measure(), documented()
    assert files == walk.files, ("docs/architecture.md's way is stale; "
                                 "`python -m tests.test_walk` prints it")
    assert summary == walk.summary()


def test_the_walk_sees_a_climb():
    walk = Walk((("a.py", ("f",)), ("b.py", ("g",)), ("a.py", ("h",))))
    assert (walk.files, walk.climbs, walk.summary()) == (
        ["a.py", "b.py"], 1, "2 files · 3 stops · 1 climbs")


if __name__ == "__main__":
    measured = measure()
    print(f"Measured: {measured.summary()}.")
    for number, file in enumerate(measured.files, 1):
        print(f"{number}. `{file}`")
    print()
    for file, functions in measured.stops:
        print(f"    {file:28s} {' '.join(functions)}")
