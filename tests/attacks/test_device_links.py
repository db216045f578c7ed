"""Links to devices and named pipes are never opened (review of issue 28: the confined reader, task files).

A user who can write inside a data root (or name a path on the command line of a server run as root) plants
``x.py -> /dev/watchdog``: opening a device runs its driver (a watchdog reboots the machine once closed, a tape
rewinds), even when the reader refuses the file right after. The confined reader used to ``open`` a path for
reading and only then ask what it was and where it lay. Now it reaches the inode with ``O_PATH`` (no driver
runs, no FIFO gets a reader), checks it (inside the roots, a regular file or a folder), and only then opens it
for reading (:mod:`asc.confined`). The command line's files, INSPECT task files and study files go through the
same reader, which says what a path is instead of "not found" and never reads a device's endless bytes.

``opened`` records every descriptor opened for reading (anything but ``O_PATH``) that is neither a regular file
nor a folder: it must stay empty. ``/dev/null`` and FIFOs stand in for devices with side effects.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from asc import confined
from asc.corpus.sources import load_corpus
from asc.errors import CorpusError, InputError

pytestmark = pytest.mark.skipif(not hasattr(os, "O_PATH") or not hasattr(os, "mkfifo"),
                                reason="O_PATH and FIFOs are Linux's (macOS opens first: asc.confined's doc)")

CODE = "def f(x):\n    if x:\n        return x + 1\n    y = [x]\n    return y\n"


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """The special files (FIFO, device, socket) that anything opened for reading during the test."""
    real_open = os.open
    seen: list[str] = []

    def spy(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if not flags & os.O_PATH:
            mode = os.fstat(fd).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                seen.append(f"{os.fsdecode(path)} ({stat.filemode(mode)})")
        return fd

    monkeypatch.setattr(os, "open", spy)
    return seen


@pytest.fixture
def planted(tmp_path) -> tuple[Path, Path]:
    """A data root whose ``code`` folder holds one real source file and three planted ones: a FIFO named like
    source, a link to ``/dev/null`` and a link to a FIFO outside the root."""
    root = tmp_path / "data"
    code = root / "code"
    code.mkdir(parents=True)
    (code / "ok.py").write_text(CODE)
    os.mkfifo(code / "pipe.py")
    (code / "null.py").symlink_to("/dev/null")
    os.mkfifo(tmp_path / "outside")
    (code / "out.py").symlink_to(tmp_path / "outside")
    return root, code


@pytest.mark.parametrize("confine", [True, False], ids=["shared", "local"])
def test_a_folder_with_planted_devices_loads_without_opening_them(planted, opened, confine):
    root, code = planted
    snippets = load_corpus(str(code), min_lines=1, roots=[root] if confine else None)
    assert [s.name for s in snippets] == ["f"]
    assert opened == []


@pytest.mark.parametrize("name", ["pipe.py", "null.py", "out.py"])
def test_a_spec_naming_a_device_or_a_fifo_is_refused_without_opening_it(planted, opened, name):
    root, code = planted
    with pytest.raises(CorpusError, match="named pipe|character device|outside the allowed data folders"):
        load_corpus(str(code / name), min_lines=1, roots=[root])
    with pytest.raises(CorpusError, match="named pipe|character device|outside the allowed data folders"):
        confined.read_file(code / name, [root.resolve()])
    assert opened == []


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "code/pipe.py", "code/null.py"])
def test_the_command_lines_reader_says_what_a_device_is_without_opening_it(planted, opened, path):
    from asc.cli.args import read_source

    root, _ = planted
    target = path if path.startswith("/") else str(root / path)
    with pytest.raises(InputError, match=r"is a (character device|named pipe \(FIFO\)), not a file: give a source"):
        read_source(target)
    assert opened == []


@pytest.mark.parametrize("what", ["folder", "named pipe", "character device"])
def test_a_task_file_that_is_no_file_is_named_and_never_read(planted, opened, what):
    """``probes layers --task-file X``: a folder or a FIFO used to be "task file not found" (and ``load_tsv`` hung on
    the FIFO and filled the memory from ``/dev/zero``)."""
    from probes.catalog import build_tasks

    root, code = planted
    path = {"folder": code, "named pipe": code / "pipe.py", "character device": Path("/dev/zero")}[what]
    with pytest.raises(InputError, match=f"is a {what}.*, not a task file: give a split<TAB>label<TAB>text file"):
        build_tasks([], "stdlib", task_files=[path])
    assert opened == []


def test_a_task_file_over_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from probes.inspect import taskfile

    big = tmp_path / "big.tsv"
    with open(big, "wb") as fh:  # sparse: the size is there, no bytes need writing
        fh.truncate(taskfile.MAX_TASK_FILE_BYTES + 1)
    reads: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(InputError, match="over the 50 MB a file may have here"):
        taskfile.load_tsv(big)
    assert reads == []
