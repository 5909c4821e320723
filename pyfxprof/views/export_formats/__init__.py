"""The export formats, one class in one file: each module of this package defines one
ExportFormat subclass, which views/exporters.py finds by scanning the package; Profile.export,
its help, the CLI's ``--NAME PATH`` flags and docs/outputs.md's table read them from there.

Example:
    >>> from pyfxprof.views.export_formats.csv import Csv
    >>> Csv.name, Csv.flag, Csv.suffixes
    ('csv', '--csv', ('.csv', '.csv.gz'))
"""

from __future__ import annotations

import re
from typing import Callable, ClassVar

#: A format's name: a Python identifier in lower case (``Profile.export(path, name)``).
_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


class ExportFormat:
    """One file format a Profile is written to. A subclass, alone in a module of this package,
    sets ``name`` (``Profile.export(path, name)``; the CLI flag ``--name`` with ``_`` as ``-``),
    ``title`` (what a message says was written), ``suffixes`` (lower case, each starting with
    "."; the longest one ending a path chooses its format), ``help`` (one line, a noun phrase:
    the flag's help is "write <help>") and ``writer = staticmethod(f)`` with
    ``f(profile, path, **options)``; optionally ``options`` (attributes of the CLI's parsed
    arguments passed on by name, e.g. ``("metric",)``) and ``rank_writer``
    (``f(ranks, path, ...)``, for the formats a gathered ranks file is written to).

    >>> class Names(ExportFormat):
    ...     name, title, suffixes, help = "names", "node names", (".names",), "the node names"
    ...     writer = staticmethod(lambda profile, path: None)
    >>> Names.flag
    '--names'
    """

    name: ClassVar[str]
    title: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]
    help: ClassVar[str]
    writer: ClassVar[Callable[..., None]]
    options: ClassVar[tuple[str, ...]] = ()
    rank_writer: ClassVar[Callable[..., None] | None] = None
    #: The CLI flag, e.g. ``--chrome-trace`` (derived from ``name``).
    flag: ClassVar[str]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        problem = format_problem(cls)
        if problem:
            raise TypeError(f"export format {cls.__module__}.{cls.__qualname__}: {problem}")
        cls.flag = "--" + cls.name.replace("_", "-")


def format_problem(cls: type) -> str | None:
    """What is wrong with the ExportFormat subclass ``cls`` (one line), or None.

    >>> format_problem(type("X", (), {"name": "Bad-Name"}))
    "name must be a lower-case identifier, got 'Bad-Name'"
    """
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        return f"name must be a lower-case identifier, got {name!r}"
    missing = [field for field in ("title", "suffixes", "help", "writer")
               if not hasattr(cls, field)]
    if missing:
        return f"set {', '.join(missing)} (see ExportFormat)"
    suffixes, text, writer = (getattr(cls, field) for field in ("suffixes", "help", "writer"))
    if (not isinstance(suffixes, tuple) or not suffixes or not all(
            isinstance(s, str) and s.startswith(".") and s == s.lower() for s in suffixes)):
        return f"suffixes must be a tuple of lower-case suffixes like '.svg', got {suffixes!r}"
    if not isinstance(text, str) or "\n" in text:
        return "help must be one line"
    if not callable(writer):
        return "writer must be staticmethod(f), f(profile, path, **options)"
    return None
