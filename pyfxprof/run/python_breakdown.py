"""Which Python functions spend the time outside the graph: the user's call and the graph's
run, each profiled untimed with cProfile (sys.setprofile's C profiler before Python 3.12,
sys.monitoring from 3.12), and per function the self time and calls the user's call spends
beyond the graph's run (docs/profile.md, "What that Python is")."""

from __future__ import annotations

import cProfile
import os
import re
import sysconfig
from collections import defaultdict
from typing import Callable

from torch.overrides import TorchFunctionMode

#: Profiled user's calls (per function, the least self time of them is kept, of the functions
#: every one of them calls: the first also warms the call, whose one-time code is left out);
#: the graph's run is profiled once, for its call counts only (the same on every run of a
#: graph).
PASSES = 2
#: Functions kept, largest first; the rest are summed as one "(other functions)" entry.
KEPT_FUNCTIONS = 30
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
_LIBRARIES = (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"])
#: pyfxprof's own files: its frames (the timed call's wrappers) are left out.
_OWN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _origin_of_file(filename: str) -> tuple[str, str]:
    """(origin, short file name): the package a file belongs to (torch, transformers, ...,
    "python" for the standard library, "model" for anything else)."""
    for root in _LIBRARIES:
        if filename.startswith(root + os.sep):
            short = filename[len(root) + 1:]
            package = short.split(os.sep, 1)[0]
            return (package if root == _LIBRARIES[0] else "python"), short
    if filename.startswith(_OWN):
        return "pyfxprof", filename[len(_OWN):]
    relative = os.path.relpath(filename) if os.path.isabs(filename) else filename
    return "model", filename if relative.startswith("..") else relative


def describe_entry(code) -> tuple[str, str, str]:
    """(function, origin, file:line) of a cProfile entry's code (a code object, or the text
    cProfile gives a built-in function: origin "torch (C)" or "builtin").

    >>> describe_entry("<built-in method torch._C._get_tracing_state>")
    ('torch._C._get_tracing_state', 'torch (C)', '')
    >>> describe_entry(describe_entry.__code__)[0]
    'describe_entry'
    """
    if isinstance(code, str):
        name = _ADDRESS.sub("", code.strip("<>")).replace("built-in method ", "")
        origin = "torch (C)" if "torch" in name else "builtin"
        return name, origin, ""
    origin, short = _origin_of_file(code.co_filename)
    qualname = getattr(code, "co_qualname", code.co_name)
    return qualname, origin, f"{short}:{code.co_firstlineno}"


class _OpsAsCalls(TorchFunctionMode):
    """Every tensor op, operators (``x * y``) included, reached through a Python call that
    cProfile sees, so an op's time is never a Python function's self time."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _profiled(call: Callable[[], object]) -> dict:
    """One profiled call: per entry (function, origin, file:line), (self ns, calls)."""
    profiler = cProfile.Profile()
    with _OpsAsCalls():
        profiler.enable()
        try:
            call()
        finally:
            profiler.disable()
    found: dict = defaultdict(lambda: [0.0, 0])
    for entry in profiler.getstats():
        key = describe_entry(entry.code)
        if key[1] == "pyfxprof" or "_lsprof.Profiler" in key[0]:
            continue  # the profiler's own frames
        found[key][0] += entry.inlinetime * 1e9
        found[key][1] += entry.callcount
    return found


def python_breakdown(user_call: Callable[[], object], graph_run: Callable[[], object],
                     passes: int = PASSES) -> list[dict]:
    """Per Python function (and built-in), the self ns and calls one user's call spends
    beyond one graph run (measured with cProfile on `passes` untimed user's calls, per
    function the least self time of the passes, so a pass preempted in it is left out, of
    the functions every pass calls, so a first call's one-time code is left out too, and on
    one untimed graph run, for its call counts), largest first: dicts of ``function``,
    ``origin``, ``file_line``, ``calls`` (the calls the user's call makes beyond the graph's)
    and ``self_ns`` (those calls at the function's mean self time in the user's call, as
    profiled: cProfile's own cost inflates it; the report scales the shares to the measured
    row). A function the graph calls as often as the user's call (the ops, the leaf modules'
    forwards) is left out: its time is in the graph's rows.

    Example:
        >>> import torch
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 4))
        >>> x = torch.ones(1, 4)
        >>> rows = python_breakdown(lambda: net(x), lambda: net[0](x))
        >>> any(row["function"] == "Sequential.forward" for row in rows)
        True
    """
    eager = [_profiled(user_call) for _ in range(passes)]
    graph = _profiled(graph_run)  # its call counts only
    rows = []
    for key in eager[-1]:
        present = [found[key] for found in eager if key in found]
        if len(present) < passes:
            continue  # one-time code of the first call (which warms it: run.user_call)
        self_ns = min(spent for spent, _ in present)  # a preempted pass is left out
        calls = max(count for _, count in present)
        extra = calls - (graph[key][1] if key in graph else 0)
        if extra <= 0 or self_ns <= 0:
            continue  # the graph makes these calls too: their time is in the graph's rows
        rows.append({"function": key[0], "origin": key[1], "file_line": key[2],
                     "calls": extra, "self_ns": round(self_ns * extra / calls, 1)})
    rows.sort(key=lambda row: row["self_ns"], reverse=True)
    if len(rows) > KEPT_FUNCTIONS:
        rest = rows[KEPT_FUNCTIONS:]
        rows = rows[:KEPT_FUNCTIONS] + [{
            "function": f"(other {len(rest)} functions)", "origin": "", "file_line": "",
            "calls": round(sum(row["calls"] for row in rest), 2),
            "self_ns": round(sum(row["self_ns"] for row in rest), 1)}]
    return rows
