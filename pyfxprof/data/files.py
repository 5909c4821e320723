"""Reading the files pyfxprof loads (saved profiles, torch.profiler traces): their bytes,
gunzipped when they are gzip data, with a one-line error naming the path and the reason."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from ..errors import PyfxprofError

GZIP_MAGIC = b"\x1f\x8b"


def read_maybe_gzipped(path: Path, doing: str) -> bytes:
    """The contents of `path`, decompressed when they start with the gzip magic or the name
    ends in .gz. Failures raise ``PyfxprofError("<doing> <path>: <reason>")``.

    Example:
        >>> read_maybe_gzipped(Path("missing.json"), "cannot read")
        Traceback (most recent call last):
        ...
        pyfxprof.errors.PyfxprofError: cannot read missing.json: no such file; check the path
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PyfxprofError(f"{doing} {path}: no such file; check the path") from None
    except IsADirectoryError:
        raise PyfxprofError(f"{doing} {path}: it is a directory, expected a file") from None
    except OSError as error:
        raise PyfxprofError(f"{doing} {path}: {error.strerror or error}") from None
    if raw.startswith(GZIP_MAGIC) or path.name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as error:
            raise PyfxprofError(f"{doing} {path}: corrupt or truncated gzip data ({error}); "
                                "write the file again") from None
    return raw
