"""The files pyfxprof reads and writes: bytes of loaded files, gunzipped when they are gzip data
(at most MAX_FILE_BYTES either way, counted as read: devices and pipes included), and every
output written safely; a one-line error naming the path and the reason."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import secrets
import stat
import zlib
from pathlib import Path
from typing import IO, Any, Iterator, Union

from ..errors import PyfxprofError

#: What a path parameter accepts: a file name or any os.PathLike (pathlib.Path).
PathLike = Union[str, "os.PathLike[str]"]

GZIP_MAGIC = b"\x1f\x8b"
#: gzip level of written files: on packed int64 samples, 3 is ~5x faster than zlib's default 6
#: and ~6% larger.
GZIP_LEVEL = 3
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
    out = io.BytesIO()  # getvalue() hands its buffer over: the content is held once
    while data:
        stream = zlib.decompressobj(wbits=31)
        while not stream.eof:
            piece = stream.decompress(data, _PIECE)
            if out.write(piece) and out.tell() > limit:
                return None
            if not piece and not stream.unconsumed_tail:
                raise EOFError("compressed file ended before the end-of-stream marker")
            data = stream.unconsumed_tail
        data = stream.unused_data
    return out.getvalue()


def read_capped(stream, limit: int) -> bytes | None:
    """The bytes of binary ``stream`` up to its end, or None past ``limit`` bytes, counted as
    they are read: a device (/dev/zero), an endless pipe or stdin stops at the cap, whatever
    ``stat`` says of its size.

    Example:
        >>> read_capped(io.BytesIO(b"abc"), 10), read_capped(io.BytesIO(bytes(11)), 10)
        (b'abc', None)
    """
    out = io.BytesIO()
    while piece := stream.read(_PIECE):
        if out.write(piece) and out.tell() > limit:
            return None
    return out.getvalue()


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
        with open(path, "rb") as stream:
            known = os.fstat(stream.fileno())  # a regular file's size is known: no need to read
            too_big = stat.S_ISREG(known.st_mode) and known.st_size > MAX_FILE_BYTES
            raw = None if too_big else read_capped(stream, MAX_FILE_BYTES)
    except FileNotFoundError:
        raise PyfxprofError(f"{doing} {path}: no such file; check the path") from None
    except IsADirectoryError:
        raise PyfxprofError(f"{doing} {path}: it is a directory, expected a file") from None
    except OSError as error:
        raise PyfxprofError(f"{doing} {path}: {error.strerror or error}") from None
    if raw is None:
        raise _too_large(doing, path, "it holds")
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


# ---- writing -------------------------------------------------------------------------------

def _write_error(path, error: OSError) -> PyfxprofError:
    return PyfxprofError(f"cannot write {path}: {error.strerror or error}")


def _exclusive_temporary(target: Path) -> tuple[Path, int]:
    """A new file beside ``target`` under a random name, created with O_EXCL and O_NOFOLLOW
    (never an existing file, never through a planted symlink): its path and descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
        try:
            return temporary, os.open(temporary, flags, 0o666)  # the umask applies
        except FileExistsError:
            continue


@contextlib.contextmanager
def _open_fd(fd: int, compress: bool, binary: bool) -> Iterator[IO[Any]]:
    """A UTF-8 text (or ``binary``) stream over descriptor ``fd``, gzip-compressed when
    ``compress``; closed (its data flushed, a write error raised) on leaving. Text that UTF-8
    cannot encode (a lone surrogate) is written backslash-escaped, never an error."""
    with open(fd, "wb") as raw:
        packed = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL) if compress else raw
        with packed if binary else io.TextIOWrapper(
                packed, encoding="utf-8", errors="backslashreplace") as stream:
            # typeshed keeps GzipFile apart from IO[bytes], which it provides at run time
            yield stream  # type: ignore[misc]


@contextlib.contextmanager
def open_output(path: str | os.PathLike[str], binary: bool = False) -> Iterator[IO[Any]]:
    """Write UTF-8 text (bytes if ``binary``) to ``path``, gzip-compressed when the name ends
    in .gz, safely:

    - a regular file (or a new one) is written under a random name created with O_EXCL in
      its directory and renamed over it when complete, so a crash never leaves half a file
      and nothing is written through a planted link;
    - a symlink is written through: its target is replaced, the link stays;
    - a device or FIFO (/dev/null, /dev/stdout, a pipe) is written directly, never replaced;
    - a read-only target, a missing directory, a full disk: a one-line PyfxprofError naming
      ``path``.

    >>> with open_output("trace.json.gz") as stream:  # doctest: +SKIP
    ...     stream.write("{}")
    """
    path = Path(path)
    target = Path(os.path.realpath(path))
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    except OSError as error:
        raise _write_error(path, error) from error
    compress = path.name.endswith(".gz")
    try:
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(21, "it is a directory; give a file name")
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            with _open_fd(os.open(target, os.O_WRONLY), compress, binary) as stream:
                yield stream
            return
        if existing is not None and not os.access(target, os.W_OK):
            raise PermissionError(13, "Permission denied (the file is read-only)")
        yield from _replace(target, existing, compress, binary)
    except OSError as error:
        raise _write_error(path, error) from error


def _replace(target: Path, existing: os.stat_result | None, compress: bool, binary: bool
             ) -> Iterator[IO[Any]]:
    """Write ``target`` through a temporary file renamed over it (keeping its permissions)."""
    temporary, fd = _exclusive_temporary(target)
    try:
        with _open_fd(fd, compress, binary) as stream:
            yield stream
        if existing is not None:
            os.chmod(temporary, stat.S_IMODE(existing.st_mode))
        os.replace(temporary, target)
    except BaseException:  # also Ctrl-C: never leave the temporary file behind
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
