"""Tests of pyfxprof.data.files: reading plain or gzip input files, capped, with one-line errors."""

import gzip
import io
import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from pyfxprof.data import files
from pyfxprof.data.files import gunzip_capped, read_maybe_gzipped
from pyfxprof.errors import PyfxprofError


def test_plain_and_gzip_files_read_the_same(tmp_path):
    plain, packed, unnamed = tmp_path / "p.json", tmp_path / "p.json.gz", tmp_path / "q.json"
    plain.write_bytes(b'{"a": 1}')
    packed.write_bytes(gzip.compress(b'{"a": 1}'))
    unnamed.write_bytes(gzip.compress(b'{"a": 1}'))  # gzip data under a plain name: by magic
    assert {read_maybe_gzipped(p, "cannot read") for p in (plain, packed, unnamed)} == {
        b'{"a": 1}'}


def test_concatenated_gzip_members_are_all_read():
    assert gunzip_capped(gzip.compress(b"ab") + gzip.compress(b"cd"), 100) == b"abcd"
    assert gunzip_capped(b"", 100) == b""


@pytest.mark.parametrize("content, reason", [
    (b'{"a": 1}', "corrupt or truncated gzip data"),                     # .gz name, plain data
    (gzip.compress(b"x" * 1000)[:-12], "corrupt or truncated gzip data"),  # truncated
])
def test_bad_gzip_data_is_a_one_line_error(tmp_path, content, reason):
    path = tmp_path / "bad.json.gz"
    path.write_bytes(content)
    with pytest.raises(PyfxprofError, match=f"^cannot load {path}: {reason}") as error:
        read_maybe_gzipped(path, "cannot load")
    assert "\n" not in str(error.value) and "write the file again" in str(error.value)


def test_missing_paths_and_directories_are_one_line_errors(tmp_path):
    with pytest.raises(PyfxprofError, match="nope.json: no such file; check the path$"):
        read_maybe_gzipped(tmp_path / "nope.json", "cannot load")
    with pytest.raises(PyfxprofError, match="it is a directory, expected a file$"):
        read_maybe_gzipped(tmp_path, "cannot load")


def test_files_and_gzip_content_over_the_cap_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1 << 20)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * ((1 << 20) + 1))
    with pytest.raises(PyfxprofError, match="big.json: it holds more than 1 MiB; refusing"):
        read_maybe_gzipped(big, "cannot load")
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"\0" * (3 << 20)))  # a few KiB that expand to 3 MiB
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(PyfxprofError, match="bomb.json.gz: it expands to more than 1 MiB"):
        read_maybe_gzipped(bomb, "cannot load")
    assert gunzip_capped(gzip.compress(b"\0" * 100), 99) is None
    assert gunzip_capped(gzip.compress(b"\0" * 100), 100) == b"\0" * 100


def _fed_forever(write_end: int, chunk: bytes) -> threading.Thread:
    """A thread writing ``chunk`` into descriptor ``write_end`` until the reader goes away."""
    def feed():
        try:
            while True:
                os.write(write_end, chunk)
        except OSError:  # EPIPE: the reader closed its end
            pass
        finally:
            os.close(write_end)
    thread = threading.Thread(target=feed, daemon=True)
    thread.start()
    return thread


def _refused_within_the_cap(path, monkeypatch, expected: str) -> None:
    """Reading ``path`` is refused past a 1 MiB cap, in one line, having held a few caps."""
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(PyfxprofError, match=f"{expected} more than 1 MiB; refusing") as error:
            read_maybe_gzipped(Path(path), "cannot load")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "\n" not in str(error.value)
    assert peak < 6 << 20, f"{peak >> 20} MiB held for a 1 MiB cap"


def test_a_device_that_never_ends_is_refused_at_the_cap(monkeypatch):
    # stat says /dev/zero holds 0 bytes: the cap counts what is read, not what stat says
    _refused_within_the_cap("/dev/zero", monkeypatch, "/dev/zero: it holds")


@pytest.mark.parametrize("chunk", [b"{" * 65536, gzip.compress(bytes(1 << 20))])
def test_a_fifo_fed_forever_is_refused_at_the_cap(tmp_path, monkeypatch, chunk):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    opener = threading.Thread(target=lambda: _fed_forever(os.open(fifo, os.O_WRONLY), chunk),
                              daemon=True)
    opener.start()  # a FIFO's open blocks until both ends are open
    _refused_within_the_cap(fifo, monkeypatch, "it holds")  # compressed bytes count too


def test_a_gzip_bomb_through_a_fifo_is_refused_at_the_cap(tmp_path, monkeypatch):
    fifo, bomb = tmp_path / "fifo.json.gz", gzip.compress(bytes(3 << 20))
    os.mkfifo(fifo)

    def write_once():
        with open(fifo, "wb") as stream:
            stream.write(bomb)
    threading.Thread(target=write_once, daemon=True).start()
    _refused_within_the_cap(fifo, monkeypatch, "it expands to")


def test_a_pipe_on_stdin_fed_forever_is_refused_at_the_cap(monkeypatch):
    read_end, write_end = os.pipe()
    feeder = _fed_forever(write_end, b" " * 65536)
    try:
        _refused_within_the_cap(f"/proc/self/fd/{read_end}", monkeypatch, "it holds")
    finally:
        os.close(read_end)  # the feeder's next write fails: it ends
        feeder.join(10)
    assert not feeder.is_alive()


def test_read_capped_counts_what_it_reads():
    assert files.read_capped(io.BytesIO(b"x" * 10), 10) == b"x" * 10
    assert files.read_capped(io.BytesIO(b"x" * 11), 10) is None
