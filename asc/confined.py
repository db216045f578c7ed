"""Reading the files users name, confined to the data roots, with no gap between the check and the read.

On a shared server a visitor names corpus paths, and the server reads them only inside the admin's data roots
(``ASC_DATA_ROOTS``). Checking a path and then opening it again lets anyone who can write inside a root swap a
file for a link to a secret in between (1 read in 6 leaked before this module). So everything here **opens
first and checks the opened descriptor**, then reads from that same descriptor:

* :func:`open_path` opens a path (the kernel follows links) without blocking (``O_NONBLOCK``: a FIFO does not
  hang the reader) and, given ``roots``, asks the kernel where the opened file or folder really is
  (:func:`real_path`): outside every root, it is closed and :class:`Refused`.
* :func:`read_fd` reads an opened descriptor: a regular file (``fstat``, so no FIFO or device) of at most
  ``max_bytes``, checked again while reading (a file growing meanwhile is refused too).
* :func:`read_file` is the two together; :func:`walk_files` reads every wanted file below an opened folder: each
  subfolder is opened relative to its parent's descriptor with ``O_DIRECTORY | O_NOFOLLOW`` (a folder link, or
  a folder swapped for one, is never entered, as ``os.walk`` entered none), each file relative to its folder's
  descriptor, then checked as :func:`open_path` checks.

**Links.** A link is followed by the open and allowed when what was opened lies inside a root (a file link
between two places of the data, or a spec naming a linked folder); one leading out of every root is refused,
whenever it was swapped in. Links to folders met inside a walked folder are not entered. Without ``roots``
(local mode) nothing is confined: the same reader follows links anywhere, as before.

**Where an opened file is.** Linux: ``readlink /proc/self/fd/N``; macOS: ``fcntl(F_GETPATH)``. Where neither
answers (``/proc`` not mounted), a confined read is refused with a message naming the fix; local reads, which
ask nothing, are unaffected. Roots are compared once resolved (``Path.resolve``), as the kernel reports paths.

Not covered: hard links (Linux lets a user hard-link only files they own or may write, with the default
``fs.protected_hardlinks=1``), and what the owner of a root moves into it.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from asc.errors import CorpusError
from asc.files import kind_of, read_bounded

__all__ = ["MAX_READ_BYTES", "Refused", "inside", "open_path", "read_fd", "read_file", "real_path", "walk_files"]

log = logging.getLogger(__name__)

MAX_READ_BYTES = 512 * 2**20  # the default cap of one read (a large .jsonl corpus); callers pass smaller ones
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS = _FLAGS | os.O_DIRECTORY | os.O_NOFOLLOW


class Refused(CorpusError):
    """A file or folder that must not be read: outside the data roots, not a regular file, or too large."""


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether ``path`` is one of ``roots`` or below one (both resolved: no link or ``..`` left)."""
    return any(path == root or root in path.parents for root in roots)


def real_path(fd: int) -> Path:
    """Where the file or folder opened as ``fd`` lies, as the kernel says; :class:`Refused` where it cannot."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    try:
        import fcntl

        getpath = getattr(fcntl, "F_GETPATH", None)  # macOS
        if getpath is not None:
            return Path(os.fsdecode(fcntl.fcntl(fd, getpath, bytes(1024)).split(b"\0", 1)[0]))
    except (ImportError, OSError):
        pass
    raise Refused("this system does not tell where an open file lies (/proc is not mounted), so reads cannot be "
                  "kept inside the data folders: mount /proc, or unset ASC_DATA_ROOTS (built-in corpora only)")


def _check(fd: int, roots: Sequence[Path] | None, shown: str | os.PathLike[str]) -> None:
    if roots is not None and not inside(real_path(fd), roots):
        raise Refused(f"{os.fspath(shown)} leads outside the allowed data folders "
                      f"({', '.join(map(str, roots)) or 'none'}): copy it into one of them, or have the server's "
                      "ASC_DATA_ROOTS include its folder")


def open_path(path: str | os.PathLike[str], roots: Sequence[Path] | None = None, *, dir_fd: int | None = None,
              shown: str | os.PathLike[str] | None = None) -> int:
    """Open ``path`` for reading (relative to ``dir_fd`` when given) and, given resolved ``roots``, refuse it
    (:class:`Refused`, closed) unless the opened file or folder lies inside one. OSError when it cannot be opened.
    The caller closes the descriptor."""
    fd = os.open(path, _FLAGS, dir_fd=dir_fd)
    try:
        _check(fd, roots, path if shown is None else shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _size(n: int, whole: bool = False) -> str:
    if n < 2**20:
        return f"{n:,} bytes"
    return f"{n / 2**20:.0f} MB" if whole else f"{n / 2**20:.1f} MB"


def _too_big(shown: str, size: int, max_bytes: int) -> Refused:
    return Refused(f"{shown} has {_size(size)}, over the {_size(max_bytes, whole=True)} a file may have here: "
                   "split it, or give the folder of the code")


def read_fd(fd: int, shown: str | os.PathLike[str], max_bytes: int = MAX_READ_BYTES) -> bytes:
    """The bytes of the regular file opened as ``fd`` (at most ``max_bytes``, else :class:`Refused`); ``shown``:
    its name in messages."""
    shown = os.fspath(shown)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{shown} is {kind_of(st.st_mode)}, not a regular file")
    data = read_bounded(fd, max_bytes)
    if data is None:
        raise _too_big(shown, max(st.st_size, max_bytes + 1), max_bytes)
    return data


def read_file(path: str | os.PathLike[str], roots: Sequence[Path] | None = None,
              max_bytes: int = MAX_READ_BYTES) -> bytes:
    """:func:`open_path` then :func:`read_fd`: the bytes of a regular file, confined to ``roots`` when given."""
    fd = open_path(path, roots)
    try:
        return read_fd(fd, path, max_bytes)
    finally:
        os.close(fd)


def _listing(fd: int, keep_dir: Callable[[str], bool], keep_file: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    dirs, files = [], []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if keep_dir(entry.name):
                        dirs.append(entry.name)
                elif not entry.is_dir() and keep_file(entry.name):  # a link to a folder is not entered
                    files.append(entry.name)
            except OSError:
                continue  # gone meanwhile
    return sorted(dirs), sorted(files)


def _read_at(dir_fd: int, name: str, shown: Path, roots: Sequence[Path] | None, max_bytes: int) -> bytes | None:
    try:
        fd = open_path(name, roots, dir_fd=dir_fd, shown=shown)
    except OSError as err:
        log.warning("skipping %s: %s", shown, err.strerror or err)
        return None
    except Refused as err:
        log.warning("skipped: %s", err)
        return None
    try:
        return read_fd(fd, shown, max_bytes)
    except Refused as err:
        log.warning("skipped: %s", err)
    except OSError as err:
        log.warning("skipping %s: %s", shown, err.strerror or err)
    finally:
        os.close(fd)
    return None


def walk_files(top_fd: int, shown: Path, roots: Sequence[Path] | None = None, *,
               keep_dir: Callable[[str], bool] = lambda name: True, keep_file: Callable[[str], bool] = lambda name: True,
               max_bytes: int = MAX_READ_BYTES, inside_top: bool = False) -> Iterator[tuple[str, bytes]]:
    """``(path relative to the folder, bytes)`` of every file below the folder opened as ``top_fd`` that
    ``keep_file(name)`` wants, in ``os.walk``'s order (top-down, names sorted), entering the subfolders
    ``keep_dir(name)`` wants. Files that cannot be read, or are refused (outside resolved ``roots``; with
    ``inside_top``, outside this folder itself), are skipped with a warning. ``shown``: the folder in messages.
    ``top_fd`` stays the caller's; at most one descriptor per folder level is held meanwhile."""
    confine = [real_path(top_fd)] if inside_top else roots
    stack: list[tuple[int, str, list[str]]] = []
    fd: int | None = os.dup(top_fd)
    rel = ""
    try:
        while fd is not None:
            dirs, files = _listing(fd, keep_dir, keep_file)
            for name in files:
                data = _read_at(fd, name, shown / rel / name, confine, max_bytes)
                if data is not None:
                    yield f"{rel}/{name}" if rel else name, data
            stack.append((fd, rel, dirs[::-1]))
            fd = None
            while fd is None and stack:
                parent, parent_rel, pending = stack[-1]
                if not pending:
                    os.close(stack.pop()[0])
                    continue
                name = pending.pop()
                rel = f"{parent_rel}/{name}" if parent_rel else name
                try:
                    fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
                except OSError as err:  # swapped for a link or a file meanwhile, or unreadable
                    log.warning("skipping folder %s: %s", shown / rel, err.strerror or err)
    finally:
        for held, _, _ in stack:
            os.close(held)
        if fd is not None:  # never on the stack at the same time
            os.close(fd)
