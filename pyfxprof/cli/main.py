"""The `pyfxprof` command line: one sub-command per module in pyfxprof.cli.commands.

The parser is built from data (cli/parser_table.py, written from the command modules by
`python -m pyfxprof.cli.parser_writer`), so `--help` and parsing import no command module, and
only the module of the sub-command being run is imported, when it runs: `pyfxprof report FILE`
needs neither torch nor the native extension.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import sys
import threading
import time
import warnings

from ..errors import PyfxprofError
from ..views.safe_text import TerminalStream
from .parsers import add_from_spec

#: Sub-command modules, in the order --help lists them; each defines ``add_parser(subparsers)``
#: that registers its parser and sets ``func=run`` where ``run(args) -> int`` returns the exit
#: code. After adding one or changing a parser, run `python -m pyfxprof.cli.parser_writer`
#: (docs/architecture.md, "Add a CLI command").
COMMAND_MODULES = ("profile", "report", "diff", "ab", "bench", "fuse", "overhead", "sweep",
                   "replay")
#: Exit code when the reader of the output closed the pipe early (`| head`): the shell's code
#: for a command ended by SIGPIPE (128 + 13), never a gate's 0.
PIPE_CLOSED = 141


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser with sub-command `command` registered, or every sub-command when
    `command` is None or not one of them (for --help and for the error listing them).

    Example:
        >>> build_parser("report").parse_args(["report", "p.json"]).profile
        'p.json'
    """
    parser = argparse.ArgumentParser(
        prog="pyfxprof",
        description="Per-node profiler for PyTorch models (torch.fx + native timers).")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    from .parser_table import COMMANDS
    for name in (command,) if command in COMMAND_MODULES else COMMAND_MODULES:
        if name in COMMANDS:
            add_from_spec(subparsers, name, COMMANDS[name])
        else:  # not in the table yet (tests/cli/test_parsers.py says so): from its module, slowly
            importlib.import_module(f"pyfxprof.cli.commands.{name}").add_parser(subparsers)
    return parser


def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings on the command line as one line on stderr: pyfxprof's own as
    `pyfxprof: warning: ...`, others with their category and where they came from.

    Example:
        >>> show_warning(UserWarning("pyfxprof: slow"), UserWarning, "x.py", 3, sys.stdout)
        pyfxprof: warning: slow
    """
    text = " ".join(str(message).split())
    if text.startswith("pyfxprof: "):
        text = f"pyfxprof: warning: {text[len('pyfxprof: '):]}"
    else:
        text = f"{category.__name__} ({filename}:{lineno}): {text}"
    print(text, file=sys.stderr if file is None else file)


def main(argv: list[str] | None = None) -> int:
    """Entry point of `pyfxprof` and `python -m pyfxprof`; returns the exit code.

    Example:
        >>> main(["profile", "--runs", "5", "--warmup", "1"])  # doctest: +SKIP
        0
    """
    started = time.perf_counter()  # `pyfxprof profile --timings` counts the imports from here
    program, argv = argv is None, sys.argv[1:] if argv is None else list(argv)
    try:
        with contextlib.redirect_stdout(TerminalStream(sys.stdout)), \
                contextlib.redirect_stderr(TerminalStream(sys.stderr)):
            code = _run(argv, started, program)
    except BrokenPipeError:  # the reader went away (`| head`): no traceback, no more output
        _discard_output()
        code = PIPE_CLOSED
    if program:  # the program itself (the console script, `python -m pyfxprof`) ends here
        _exit_now(code)
    return code


def _discard_output() -> None:
    """Points standard output at the null device, so that what is still buffered for a
    closed pipe is dropped at exit instead of raising again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a replaced sys.stdout): nothing to do
        pass


def _exit_now(code: int) -> None:
    """Ends the program with `code` once its atexit handlers have run and its output is
    flushed, without the interpreter's teardown of every module, which takes about a fifth of
    `import torch` once torch is loaded (benchmarks/HISTORY.md, "Start-up"); returns when torch
    is not loaded or another non-daemon thread runs (the interpreter then joins it; a daemon
    thread, such as the monitor tqdm starts for the bar torch.fx.Interpreter makes in the
    analysis run, is stopped at exit either way)."""
    if "torch" not in sys.modules or any(
            not thread.daemon for thread in threading.enumerate()
            if thread is not threading.main_thread()):
        return
    atexit._run_exitfuncs()  # logging's shutdown and the like, as at a normal exit
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`) or stream: nothing to keep
            pass
    os._exit(code)


def _run(argv: list[str], started: float, program: bool) -> int:
    """main() inside its safe output streams; the command's arguments get `started` (main's
    first perf_counter reading) and `program` (main is the process's program: `pyfxprof
    profile --timings` then counts the interpreter's start too)."""
    try:  # Ctrl-C while still importing torch and the command is one line too
        with warnings.catch_warnings():  # restores the usual display afterwards
            warnings.showwarning = show_warning
            args = build_parser(argv[0] if argv else None).parse_args(argv)
            args.started, args.program = started, program
            return int(args.func(args) or 0)
    except PyfxprofError as error:
        print(f"pyfxprof: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pyfxprof: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("pyfxprof: error: out of memory; free memory, or use fewer runs/nodes or a "
              "smaller file", file=sys.stderr)
        return 2
