"""Tests of pyfxprof.data.files: reading plain or gzip input files, capped, with one-line errors."""

import gzip

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
