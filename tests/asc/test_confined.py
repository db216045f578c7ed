"""asc.confined: open first, check the opened descriptor, read from it; walks that never enter a folder link."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from asc.confined import Refused, open_path, read_file, walk_files
from asc.corpus.sources import load_corpus
from asc.errors import CorpusError


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "data"
    for rel in ("pkg/a.py", "pkg/sub/b.py", "pkg/.hidden/c.py", "pkg/z.txt", "top.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.py").write_text("# outside\n")
    (root / "pkg" / "in_link.py").symlink_to(root / "top.py")
    (root / "pkg" / "out_link.py").symlink_to(outside / "o.py")
    (root / "pkg" / "dir_link").symlink_to(outside, target_is_directory=True)
    return root, outside


def _walk(folder: Path, roots: list[Path] | None, **kwargs) -> dict[str, bytes]:
    fd = open_path(folder, roots)
    try:
        return dict(walk_files(fd, folder, roots, keep_dir=lambda d: not d.startswith("."),
                               keep_file=lambda f: f.endswith(".py"), **kwargs))
    finally:
        os.close(fd)


def test_a_walk_reads_in_os_walks_order_and_enters_no_folder_link(tmp_path, caplog):
    root, outside = _tree(tmp_path)
    confined_read = _walk(root / "pkg", [root.resolve()])
    assert list(confined_read) == ["a.py", "in_link.py", "sub/b.py"]  # files first, then subfolders, sorted
    assert confined_read["in_link.py"] == b"# top.py\n"  # a link inside the root is read
    assert "out_link.py leads outside" in caplog.text
    local = _walk(root / "pkg", None)
    assert list(local) == ["a.py", "in_link.py", "out_link.py", "sub/b.py"]  # local: links followed, as before
    assert list(_walk(root / "pkg", None, inside_top=True)) == ["a.py", "sub/b.py"]  # inside the folder only


def test_a_spec_outside_the_roots_is_refused_after_opening(tmp_path):
    root, outside = _tree(tmp_path)
    with pytest.raises(Refused, match="outside the allowed data folders"):
        read_file(root / "pkg" / "out_link.py", [root.resolve()])
    with pytest.raises(Refused, match="outside the allowed data folders"):
        open_path(root / "pkg" / "dir_link", [root.resolve()])
    assert read_file(root / "pkg" / "out_link.py") == b"# outside\n"  # no roots: read as before


def test_only_regular_files_of_a_bounded_size_are_read(tmp_path):
    big = tmp_path / "big.py"
    big.write_bytes(b"x" * 101)
    with pytest.raises(Refused, match="101 bytes, over the 100 bytes"):
        read_file(big, max_bytes=100)
    assert read_file(big, max_bytes=101) == b"x" * 101
    with pytest.raises(Refused, match="not a regular file"):
        read_file(tmp_path)


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="no /proc here")
def test_the_bound_holds_while_reading_not_only_before():
    """A file holding more than its size said (one growing since ``fstat``; a /proc file reports 0 bytes) is
    refused once the bytes read pass the bound, and read whole within it."""
    whole = Path("/proc/self/status").read_bytes()
    assert os.stat("/proc/self/status").st_size < 10 < len(whole)
    with pytest.raises(Refused, match="over the 10 bytes"):
        read_file("/proc/self/status", max_bytes=10)
    assert read_file("/proc/self/status", max_bytes=2**20).startswith(b"Name:")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_like_source_never_blocks_a_load(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "ok.py").write_text("def f(x):\n    return x\n")
    os.mkfifo(folder / "pipe.py")  # the old reader blocked forever on it (no writer ever comes)
    assert [s.name for s in load_corpus(str(folder), min_lines=1)] == ["f"]
    with pytest.raises(CorpusError, match=r"pipe.py is a named pipe \(FIFO\), not a regular file or folder"):
        load_corpus(str(folder / "pipe.py"), min_lines=1)


def test_without_the_kernels_answer_confined_reads_are_refused_and_local_ones_work(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")

    def no_proc(*args, **kwargs):
        raise OSError("no /proc")

    monkeypatch.setattr(os, "readlink", no_proc)
    monkeypatch.setitem(sys.modules, "fcntl", None)  # no F_GETPATH either (import fails)
    with pytest.raises(Refused, match="mount /proc"):
        read_file(path, [tmp_path.resolve()])
    assert read_file(path) == b"x = 1\n"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_loads_leave_no_descriptor_open(tmp_path):
    folder = tmp_path / "c"
    (folder / "sub").mkdir(parents=True)
    for i in range(4):
        (folder / "sub" / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
    before = len(os.listdir("/proc/self/fd"))
    for limit in (1, 2, None):  # a load that stops early closes what it opened too
        load_corpus(str(folder), limit=limit, min_lines=1, roots=[tmp_path])
    assert len(os.listdir("/proc/self/fd")) == before
