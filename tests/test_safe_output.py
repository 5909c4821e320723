"""Every output written safely: random O_EXCL temporaries, symlinks written through, devices and FIFOs written directly, errors in one line."""

import os
import stat
import threading

import pytest

from pyfxprof.data.files import open_output
from pyfxprof.data.persist import load_profile
from pyfxprof.errors import PyfxprofError
from tests.data.test_persist import make_profile

WRITERS = {
    "save": lambda prof, path: prof.save(path),
    "html": lambda prof, path: prof.export_html(path),
    "chrome": lambda prof, path: prof.export_chrome_trace(path),
    "stacks": lambda prof, path: prof.export_stacks(path),
    "flame": lambda prof, path: prof.export_flamegraph(path),
    "speedscope": lambda prof, path: prof.export_speedscope(path),
    "plot": lambda prof, path: prof.plot(path),
}


def test_writes_and_compresses_and_leaves_nothing_behind(tmp_path):
    with open_output(tmp_path / "a.txt") as stream:
        stream.write("hello")
    with open_output(tmp_path / "a.txt.gz") as stream:
        stream.write("hello")
    assert (tmp_path / "a.txt").read_text() == "hello"
    assert (tmp_path / "a.txt.gz").read_bytes()[:2] == b"\x1f\x8b"
    with pytest.raises(RuntimeError), open_output(tmp_path / "b.txt") as stream:
        stream.write("half")
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "a.txt.gz"]


def test_planted_links_at_old_predictable_names_are_never_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    for name in ("out.json.partial", ".out.json.tmp"):
        (tmp_path / name).symlink_to(victim)
    make_profile().save(tmp_path / "out.json")
    assert victim.read_text() == "keep"
    assert load_profile(tmp_path / "out.json") == make_profile()


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_symlink_is_written_through_by_every_output(tmp_path, writer):
    real = tmp_path / "real" / "target"
    real.parent.mkdir()
    real.write_text("old")
    os.chmod(real, 0o640)
    link = tmp_path / "link"
    link.symlink_to(real)
    WRITERS[writer](make_profile(runs=2, run_starts=True), link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() != b"old" and stat.S_IMODE(os.stat(real).st_mode) == 0o640
    assert sorted(p.name for p in real.parent.iterdir()) == ["target"]


def test_a_fifo_is_written_directly_never_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(open(fifo, "rb").read()))
    reader.start()
    make_profile().export_stacks(fifo)
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received and received[0].count(b"\n") >= 3


def test_a_device_is_written_directly_never_replaced(tmp_path):
    null = tmp_path / "null"
    try:  # a copy of /dev/null where allowed (root with CAP_MKNOD)
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        null.symlink_to("/dev/null")
    make_profile().save(null)
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_device_is_a_one_line_error_with_the_path():
    with pytest.raises(PyfxprofError, match=r"^cannot write /dev/full: No space left on device$"):
        make_profile().save("/dev/full")
    with pytest.raises(PyfxprofError, match=r"^cannot write /dev/full: No space left"):
        make_profile().export_html("/dev/full")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files and directories")
def test_read_only_targets_are_one_line_errors(tmp_path):
    ro = tmp_path / "ro.json"
    ro.write_text("keep")
    os.chmod(ro, 0o444)
    with pytest.raises(PyfxprofError, match=f"^cannot write {ro}: Permission denied"):
        make_profile().save(ro)
    assert ro.read_text() == "keep"
    folder = tmp_path / "ro_dir"
    folder.mkdir()
    os.chmod(folder, 0o555)
    with pytest.raises(PyfxprofError, match=f"^cannot write {folder / 'p.json'}: Permission"):
        make_profile().save(folder / "p.json")


def test_missing_directory_and_directory_targets_are_one_line_errors(tmp_path):
    with pytest.raises(PyfxprofError, match="^cannot write .*nowhere/p.json: No such file"):
        make_profile().save(tmp_path / "nowhere" / "p.json")
    with pytest.raises(PyfxprofError, match="it is a directory"):
        make_profile().export_stacks(tmp_path)
