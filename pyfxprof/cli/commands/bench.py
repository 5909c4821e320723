"""`pyfxprof bench STMT [--setup CODE] [--param NAME=V1,V2 ...]`: a microbenchmark of one Python
statement, in `python -m timeit`'s manner, on pyfxprof's native timers (pyfxprof.bench); with
--param, one table over every combination of the values, the cells taking turns
(pyfxprof.run.bench.bench_cells, as bench_grid)."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from ...errors import ArgumentError, PyfxprofError, first_line
from ...run.bench import BASELINE_CHOICES, THREADS_PARAM, bench, bench_cells, grid_cells
from .arg_types import open_unit_interval, positive_int

#: The name the statement is compiled under.
STATEMENT_FUNCTION = "pyfxprof_bench_statement"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench", help="time a Python statement call by call (timeit-like, native timers)",
        description="Run SETUP once (per grid cell), then time STMT call by call on pyfxprof's "
                    "native clock until the median's 95% interval is within --target or "
                    "--budget seconds are spent; print the median per call with its interval "
                    "(docs/bench.md). `torch` is imported for both. With --param, SETUP and "
                    "STMT see each parameter by name and one table is printed, rows by the "
                    "first parameters, columns by the last.")
    parser.add_argument("stmt", metavar="STMT", help='statement to time, e.g. "torch.add(x, y)"')
    parser.add_argument("-s", "--setup", action="append", default=[], metavar="CODE",
                        help="code run once before timing (repeatable, as timeit's -s)")
    parser.add_argument("-p", "--param", action="append", default=[], metavar="NAME=V1,V2",
                        help="a grid parameter and its values as Python expressions "
                             f"(repeatable); '{THREADS_PARAM}' sets torch's thread count")
    parser.add_argument("--target", type=open_unit_interval, default=0.01,
                        help="stop when the median's 95%% interval is within ± this fraction "
                             "(default 0.01)")
    parser.add_argument("--budget", type=float, default=2.0, metavar="SECONDS",
                        help="seconds of timed calls at most, per cell (default 2)")
    parser.add_argument("--baseline", choices=sorted(BASELINE_CHOICES),
                        help="also time the calls with time.perf_counter()/time.time() around "
                             "each call and each block, side by side")
    parser.add_argument("--threads", type=positive_int,
                        help="torch's intra-op threads while timing (default: torch's)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    options = {"target": args.target, "budget": args.budget, "baseline": args.baseline}
    if not args.param:
        statement = _statement(args.stmt, "\n".join(args.setup), {})
        print(bench(statement, threads=args.threads, label=args.stmt, **options))
        return 0
    cells: list = []
    for cell in grid_cells(dict(_parameter(text) for text in args.param)):
        names = {k: v for k, v in cell.items() if k != THREADS_PARAM}
        statement = _statement(args.stmt, "\n".join(args.setup), names)
        cells.append((statement, (), {}, cell.get(THREADS_PARAM, args.threads), args.stmt, cell))
    print(bench_cells(cells, **options))
    return 0


def _namespace(names: dict[str, Any]) -> dict[str, Any]:
    import torch  # late: `pyfxprof --help` needs no torch

    # __name__: functions defined there know their module, as in a script
    return {"__name__": "pyfxprof_bench", "torch": torch, **names}


def _statement(stmt: str, setup: str, names: dict[str, Any]) -> Callable[[], Any]:
    """A function of no arguments running `stmt` in the namespace `setup` left, `names` in it."""
    namespace = _namespace(names)
    body = "\n".join("    " + line for line in stmt.splitlines()) or "    pass"
    _run_code(setup, namespace, "--setup")
    _run_code(f"def {STATEMENT_FUNCTION}():\n{body}", namespace, "STMT")
    return namespace[STATEMENT_FUNCTION]


def _run_code(code: str, namespace: dict, what: str) -> None:
    """exec `code` in `namespace`, a one-line error naming `what` when it fails."""
    try:
        exec(compile(code, f"<{what}>", "exec"), namespace)
    except SyntaxError as error:
        raise ArgumentError(f"{what} is not valid Python: {error.msg} ({error.text or ''!s})"
                            .replace("\n", " ")) from None
    except Exception as error:
        raise PyfxprofError(f"{what} raised {type(error).__name__}: {first_line(error)}") \
            from None


def _parameter(text: str) -> tuple[str, list]:
    """'n=1,1024' -> ('n', [1, 1024]): each value a Python expression (torch imported).

    Example:
        >>> _parameter("n=1, 2**10")
        ('n', [1, 1024])
    """
    name, equals, values = text.partition("=")
    name = name.strip()
    if not equals or not name.isidentifier() or not values.strip():
        raise ArgumentError(f"--param must be NAME=V1,V2,... (e.g. n=1,1024), got {text!r}")
    namespace = _namespace({})
    try:
        return name, [eval(value, namespace) for value in values.split(",")]
    except Exception as error:
        raise ArgumentError(f"--param {name}: cannot read {values!r} as Python values: "
                            f"{first_line(error)}") from None
