"""The export registry: every file format a Profile is written to, found in
views/export_formats/ (one ExportFormat subclass per module).

``Profile.export``, its help, the CLI's export flags (``--chrome-trace PATH`` ...) and their
help, ``pyfxprof report`` and the table of outputs in docs/outputs.md all read FORMATS; adding a
format is adding one file (docs/architecture.md, "Add an export format").

Example:
    >>> [f.name for f in FORMATS][:3]
    ['chrome_trace', 'csv', 'flamegraph']
    >>> format_for_path("trace.json.gz").name
    'chrome_trace'
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

from ..data.files import PathLike
from ..data.profile import Profile
from ..errors import ArgumentError, PyfxprofError
from . import export_formats
from .export_formats import ExportFormat

#: A format class of views/export_formats/ (its fields are class attributes).
Format = type[ExportFormat]


def discover(package: str = export_formats.__name__) -> tuple[Format, ...]:
    """The ExportFormat subclass of each module of ``package``, by module name; a TypeError
    names a module defining none or several, and two formats sharing a name or a suffix.

    >>> [f.__name__ for f in discover()][:2]
    ['ChromeTrace', 'Csv']
    """
    found = []
    for info in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__),
                       key=lambda info: info.name):
        module = importlib.import_module(f"{package}.{info.name}")
        classes = [value for value in vars(module).values() if isinstance(value, type)
                   and issubclass(value, ExportFormat) and value.__module__ == module.__name__]
        if len(classes) != 1:
            raise TypeError(f"{module.__name__} defines {len(classes)} export formats: a module "
                            f"of {package} is one format (one ExportFormat subclass)")
        found.append(classes[0])
    _check_distinct(found)
    return tuple(found)


def _check_distinct(formats: list[Format]) -> None:
    """TypeError naming two formats that share a name or a suffix."""
    owner: dict[str, Format] = {}
    for export_format in formats:
        for key in (export_format.name, *export_format.suffixes):
            if key in owner:
                raise TypeError(f"export formats {owner[key].__module__} and "
                                f"{export_format.__module__} both claim {key!r}")
            owner[key] = export_format


#: Every format, by module name. Longer suffixes win (``.speedscope.json`` over ``.json``);
#: a name or suffix belongs to one format (discover refuses two).
FORMATS = discover()
BY_NAME = {f.name: f for f in FORMATS}


def _listing() -> str:
    return ", ".join(f"{f.name} ({' '.join(f.suffixes)})" for f in FORMATS)


def format_for_path(path) -> Format:
    """The format whose longest suffix ends ``path``'s name, or a PyfxprofError listing them.

    >>> format_for_path("run.speedscope.json").name, format_for_path("flame.svg").name
    ('speedscope', 'flamegraph')
    """
    name = Path(path).name.lower()
    matches = [(len(s), f) for f in FORMATS for s in f.suffixes if name.endswith(s)]
    if not matches:
        raise PyfxprofError(f"cannot tell the format of {path} from its suffix: pass "
                            f"format= one of {_listing()}")
    return max(matches, key=lambda match: match[0])[1]


def export(profile: Profile, path: PathLike, format: str | None = None, **options: Any) -> None:
    """Write ``profile`` to ``path`` in ``format`` (a FORMATS name; default: from the suffix);
    ``options`` go to the format's writer (e.g. ``metric="total"``, ``runs=range(5)``).

    >>> prof.export("flame.svg"); prof.export("trace.txt", "chrome_trace")  # doctest: +SKIP
    """
    chosen = chosen_format(path, format)
    _check_options(chosen, options)
    chosen.writer(profile, path, **options)


def chosen_format(path: PathLike, format: str | None = None) -> Format:
    """The format ``export(path, format)`` writes: ``format`` by name, else the path's
    suffix.

    >>> chosen_format("report.html").name, chosen_format("t.json", "chrome_trace").name
    ('html', 'chrome_trace')
    """
    if format is None:
        return format_for_path(path)
    if format in BY_NAME:
        return BY_NAME[format]
    raise PyfxprofError(f"unknown export format {format!r}: use one of {_listing()}")


def _check_options(chosen: Format, options: dict) -> None:
    """ArgumentError naming an option that ``chosen``'s writer does not take (and those it
    takes), before anything is written."""
    taken = [name for name, p in list(inspect.signature(chosen.writer).parameters.items())[2:]
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = sorted(set(options) - set(taken))
    if unknown:
        raise ArgumentError(f"{unknown[0]}= is not an option of the {chosen.name} format; it "
                            f"takes {', '.join(taken) or 'no options'}")


export.__doc__ = (export.__doc__ or "") + "\n    Formats (name, suffixes: what):\n" + "".join(
    f"      {f.name} ({' '.join(f.suffixes)}): {f.help}\n" for f in FORMATS)
