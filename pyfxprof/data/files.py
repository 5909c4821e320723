"""Reading the files pyfxprof loads (saved profiles, torch.profiler traces): their bytes,
gunzipped when they are gzip data (at most MAX_FILE_BYTES either way), with a one-line error
naming the path and the reason."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from ..errors import PyfxprofError

GZIP_MAGIC = b"\x1f\x8b"
#: Largest file, or gunzipped content, that is read (a gzip bomb stops here).
MAX_FILE_BYTES = 256 << 20
_PIECE = 1 << 20


def _too_large(doing: str, path: Path, what: str) -> PyfxprofError:
    return PyfxprofError(f"{doing} {path}: {what} more than {MAX_FILE_BYTES >> 20} MiB; "
                         "refusing to read it (not a file pyfxprof wrote, or split it)")


def gunzip_capped(data: bytes, limit: int) -> bytes | None:
    """The gunzipped content of ``data`` (every gzip member), or None past ``limit`` bytes.
    zlib errors propagate.

    Example:
        >>> gunzip_capped(gzip.compress(b"abc") * 2, 10)
        b'abcabc'
        >>> gunzip_capped(gzip.compress(bytes(100)), 10) is None
        True
    """
    out = bytearray()
    while data:
        stream = zlib.decompressobj(wbits=31)
        while not stream.eof:
            piece = stream.decompress(data, _PIECE)
            out += piece
            if len(out) > limit:
                return None
            if not piece and not stream.unconsumed_tail:
                raise EOFError("compressed file ended before the end-of-stream marker")
            data = stream.unconsumed_tail
        data = stream.unused_data
    return bytes(out)


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
        if path.stat().st_size > MAX_FILE_BYTES:
            raise _too_large(doing, path, "it holds")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise PyfxprofError(f"{doing} {path}: no such file; check the path") from None
    except IsADirectoryError:
        raise PyfxprofError(f"{doing} {path}: it is a directory, expected a file") from None
    except OSError as error:
        raise PyfxprofError(f"{doing} {path}: {error.strerror or error}") from None
    if raw.startswith(GZIP_MAGIC) or path.name.endswith(".gz"):
        try:
            unpacked = gunzip_capped(raw, MAX_FILE_BYTES)
        except (EOFError, OSError, zlib.error) as error:
            raise PyfxprofError(f"{doing} {path}: corrupt or truncated gzip data ({error}); "
                                "write the file again") from None
        if unpacked is None:
            raise _too_large(doing, path, "it expands to")
        raw = unpacked
    return raw
