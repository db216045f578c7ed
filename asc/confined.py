"""Reading the files users name, confined to the data roots, with no gap between the check and the read.

On a shared server a visitor names corpus paths, and the server reads them only inside the admin's data roots
(``ASC_DATA_ROOTS``). Checking a path and then opening it again lets anyone who can write inside a root swap a
file for a link to a secret in between (1 read in 6 leaked before this module). So everything here **opens
first and checks the opened descriptor**, then reads from that same descriptor. It is the one reader of the
files users name: corpora, the command line's source files (:func:`read_user_file`), task files and docs.

* :func:`open_path` opens a path (the kernel follows links) **without opening the file itself yet**: on Linux
  with ``O_PATH``, which reaches the inode and nothing more (no device driver runs, a FIFO gets no reader, so a
  link to ``/dev/watchdog`` or a pipe costs nothing even to a server run as root). It then asks the kernel where
  that inode really is (:func:`real_path`; given ``roots``, outside every root it is :class:`Refused`) and what
  it is (``fstat``: only a regular file, or a folder where one is wanted). Only then does it open it for
  reading, through ``/proc/self/fd/N``: the same inode, no second walk of the path (``O_NONBLOCK``, never a
  controlling terminal).
* :func:`read_fd` reads an opened descriptor: a regular file of at most ``max_bytes``, its size checked before a
  byte is read and again while reading (a file growing meanwhile is refused too): the one bounded read loop.
* :func:`read_file` is the two together; :func:`read_user_file` is the same reader with the command line's
  :class:`~asc.errors.InputError` messages (:class:`Wording` says how a reader refuses); :func:`walk_files`
  reads every wanted file below an opened folder: each subfolder is opened relative to its parent's descriptor
  with ``O_DIRECTORY | O_NOFOLLOW`` (a folder link, or a folder swapped for one, is never entered, as
  ``os.walk`` entered none), each file relative to its folder's descriptor, then checked as :func:`open_path`
  checks.
* :func:`corpus_roots` gives the folders a corpus's reads are confined to: the data roots resolved, or a
  built-in corpus's own folder (:func:`builtin_folder`: the standard library, the ``algorithms`` package), which
  is read wherever the roots are.

**Links.** A link is followed by the open and allowed when what was opened lies inside a root (a file link
between two places of the data, or a spec naming a linked folder); one leading out of every root is refused,
whenever it was swapped in. Links to folders met inside a walked folder are not entered. Without ``roots``
(local mode) nothing is confined: the same reader follows links anywhere, as before, and still opens nothing
but regular files and folders.

**Where an opened file is.** Linux: ``readlink /proc/self/fd/N``; macOS: ``fcntl(F_GETPATH)``. Where neither
answers (``/proc`` not mounted), a confined read is refused with a message naming the fix; local reads, which
ask nothing, are unaffected. Roots are compared once resolved (``Path.resolve``), as the kernel reports paths.

**Other systems.** Without ``O_PATH`` (macOS) the path is opened for reading directly (``O_NONBLOCK``: a FIFO
still does not block) and checked after: opening a device there runs its driver's open before the check
refuses it. On Linux without ``/proc`` (local mode only, see above) the checked inode is opened again by its
path and refused unless it is the same inode (device and inode numbers), so only a swap in that instant
reaches a device's open.

Not covered: hard links (Linux lets a user hard-link only files they own or may write, with the default
``fs.protected_hardlinks=1``), and what the owner of a root moves into it.
"""

from __future__ import annotations

import errno
import importlib.util
import logging
import os
import stat
import sysconfig
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from asc.errors import AscError, CorpusError, InputError
from asc.files import check_path_text, kind_of, os_error_message
from asc.files import shown as shown_path

__all__ = ["MAX_READ_BYTES", "Refused", "Wording", "builtin_folder", "corpus_roots", "inside", "open_path",
           "read_fd", "read_file", "read_user_file", "read_user_lines", "real_path", "resolve_roots", "walk_files"]

log = logging.getLogger(__name__)

MAX_READ_BYTES = 512 * 2**20  # the default cap of one read (a large .jsonl corpus); callers pass smaller ones
_O_PATH = getattr(os, "O_PATH", 0)  # Linux; 0 where the system has none (macOS: see the module doc)
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS = _FLAGS | os.O_DIRECTORY | os.O_NOFOLLOW
_CHUNK = 1 << 20  # bytes asked of one os.read


class Refused(CorpusError):
    """A file or folder that must not be read: outside the data roots, not a regular file, or too large."""


def _size(n: int, whole: bool = False) -> str:
    if n < 2**20:
        return f"{n:,} bytes"
    return f"{n / 2**20:.0f} MB" if whole else f"{n / 2**20:.1f} MB"


@dataclass(frozen=True)
class Wording:
    """How a reader refuses a file it opened: the error class and the words of its two messages, "``X`` is a
    named pipe (FIFO), not a ``kind``: ``fix``" and "``X`` has 9.0 MB, over the 8 MB a file may have here:
    ``size_fix``". The default is a corpus's (:class:`Refused`); :func:`read_user_file` has the command line's."""

    error: type[AscError] = Refused
    kind: str = "regular file"
    fix: str = ""
    size_fix: str = "split it, or give the folder of the code"

    def not_readable(self, name: str, mode: int, folders: bool = False) -> AscError:
        fix = f": {self.fix}" if self.fix else ""
        return self.error(f"{name} is {kind_of(mode)}, not a {self.kind}{' or folder' if folders else ''}{fix}")

    def too_big(self, name: str, size: int, max_bytes: int) -> AscError:
        return self.error(f"{name} has {_size(size)}, over the {_size(max_bytes, whole=True)} a file may have here: "
                          f"{self.size_fix}")


_CORPUS = Wording()


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether ``path`` is one of ``roots`` or below one (both resolved: no link or ``..`` left)."""
    return any(path == root or root in path.parents for root in roots)


def resolve_roots(roots: Sequence[str | os.PathLike[str]] | None) -> list[Path] | None:
    """``roots`` as the kernel reports paths (``~`` expanded, links and ``..`` resolved); None stays None."""
    return None if roots is None else [Path(r).expanduser().resolve() for r in roots]


def builtin_folder(spec: str) -> Path | None:
    """The folder a built-in corpus's files are read from: ``stdlib`` the standard library's, ``algorithms`` the
    package's own folder (a :class:`~asc.errors.CorpusError` naming the fix when it is not installed); None for
    every other spec (``humaneval`` has no files)."""
    if spec == "stdlib":
        return Path(sysconfig.get_paths()["stdlib"])
    if spec == "algorithms":
        found = importlib.util.find_spec("algorithms")
        if found is None or not found.submodule_search_locations:
            raise CorpusError("the algorithms corpus needs the algorithms==1.0.1 package; run `make app`")
        return Path(list(found.submodule_search_locations)[0])
    return None


def corpus_roots(spec: str, roots: Sequence[str | os.PathLike[str]] | None) -> list[Path] | None:
    """The resolved folders that reads of corpus ``spec`` are confined to, given the data ``roots`` (None: not
    confined, local mode): a built-in corpus's own folder (:func:`builtin_folder`) in their place, wherever the
    roots are (a shared server reads the standard library, and nothing beside it, for ``stdlib``); the roots
    resolved for every other spec."""
    if roots is None:
        return None
    folder = builtin_folder(spec)
    return [folder.resolve()] if folder is not None else resolve_roots(roots)


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


def _check(fd: int, roots: Sequence[Path] | None, name: str, folders: bool, wording: Wording) -> os.stat_result:
    """The opened file's ``stat``, or the refusal: outside ``roots``, or neither a regular file nor (``folders``)
    a folder."""
    if roots is not None and not inside(real_path(fd), roots):
        raise Refused(f"{name} leads outside the allowed data folders "
                      f"({', '.join(map(str, roots)) or 'none'}): copy it into one of them, or have the server's "
                      "ASC_DATA_ROOTS include its folder")
    st = os.fstat(fd)
    if not (stat.S_ISREG(st.st_mode) or (folders and stat.S_ISDIR(st.st_mode))):
        raise wording.not_readable(name, st.st_mode, folders)
    return st


def _reopen(handle: int, st: os.stat_result, path: str | os.PathLike[str], dir_fd: int | None, name: str,
            wording: Wording) -> int:
    """The checked inode of the ``O_PATH`` descriptor ``handle``, opened for reading through ``/proc``; without
    ``/proc``, by its path again, refused unless it is still the same inode."""
    flags = _FLAGS | (os.O_DIRECTORY if stat.S_ISDIR(st.st_mode) else 0)
    try:
        return os.open(f"/proc/self/fd/{handle}", flags)
    except OSError as err:
        if err.errno not in (errno.ENOENT, errno.ENOTDIR):  # /proc is there: a real error (permission denied)
            raise
    fd = os.open(path, flags, dir_fd=dir_fd)
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        os.close(fd)
        raise wording.error(f"{name} changed while it was opened: try again")
    return fd


def open_path(path: str | os.PathLike[str], roots: Sequence[Path] | None = None, *, dir_fd: int | None = None,
              shown: str | os.PathLike[str] | None = None, folders: bool = True, wording: Wording = _CORPUS) -> int:
    """A descriptor for reading ``path`` (relative to ``dir_fd`` when given), a regular file or (``folders``) a
    folder: anything else (a FIFO, a device, a socket) is refused with ``wording`` before it is opened for
    reading (module doc), and, given resolved ``roots``, so is anything that does not lie inside one of them
    (:class:`Refused`). OSError when it cannot be opened; ``shown``: its name in messages. The caller closes it."""
    name = os.fspath(path if shown is None else shown)
    if not _O_PATH:
        fd = os.open(path, _FLAGS, dir_fd=dir_fd)
        try:
            _check(fd, roots, name, folders, wording)
        except BaseException:
            os.close(fd)
            raise
        return fd
    handle = os.open(path, _O_PATH | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        return _reopen(handle, _check(handle, roots, name, folders, wording), path, dir_fd, name, wording)
    finally:
        os.close(handle)


def read_fd(fd: int, shown: str | os.PathLike[str], max_bytes: int = MAX_READ_BYTES,
            wording: Wording = _CORPUS) -> bytes:
    """The bytes of the regular file opened as ``fd`` (at most ``max_bytes``, else refused with ``wording``);
    ``shown``: its name in messages."""
    name = os.fspath(shown)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise wording.not_readable(name, st.st_mode)
    if st.st_size > max_bytes:
        raise wording.too_big(name, st.st_size, max_bytes)
    chunks, total = [], 0
    while chunk := os.read(fd, min(_CHUNK, max_bytes + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:  # it grew since fstat
            raise wording.too_big(name, total, max_bytes)
    return b"".join(chunks)


def read_file(path: str | os.PathLike[str], roots: Sequence[Path] | None = None,
              max_bytes: int = MAX_READ_BYTES, wording: Wording = _CORPUS) -> bytes:
    """:func:`open_path` then :func:`read_fd`: the bytes of a regular file, confined to ``roots`` when given."""
    fd = open_path(path, roots, folders=False, wording=wording)
    try:
        return read_fd(fd, path, max_bytes, wording)
    finally:
        os.close(fd)


def read_user_file(path: str | os.PathLike[str], max_bytes: int, what: str = "file", fix: str = "",
                   size_fix: str = "", missing: str = "") -> bytes:
    """The bytes of the regular file ``path`` that a user named (a command-line argument; at most ``max_bytes``),
    or an :class:`~asc.errors.InputError` naming the fix: a bad path text (:func:`asc.files.check_path_text`),
    not found (``missing``: the whole message), what it is instead (a folder, a named pipe, a device, never
    opened; ``fix`` ends that message) or too large (``size_fix``). :func:`read_file` without roots, with these
    messages."""
    check_path_text(path, what)
    wording = Wording(InputError, what, fix or f"give a {what}", size_fix or f"give a smaller {what}")
    name = shown_path(path)
    try:
        fd = open_path(path, shown=name, folders=False, wording=wording)
    except FileNotFoundError:
        raise InputError(missing or f"{what} not found: {name}") from None
    except OSError as err:
        raise InputError(os_error_message(err, path)) from None
    try:
        return read_fd(fd, name, max_bytes, wording)
    except OSError as err:
        raise InputError(os_error_message(err, path)) from None
    finally:
        os.close(fd)


def read_user_lines(path: str | os.PathLike[str], max_bytes: int, what: str, fix: str, missing: str) -> list[str]:
    """The lines of a UTF-8 JSON-lines file a user named (:func:`read_user_file`), which must hold at least a
    header line: :class:`~asc.errors.InputError` for text that is not UTF-8 or an empty file."""
    data = read_user_file(path, max_bytes, what, fix=fix, missing=missing)
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise InputError(f"{path} cannot be read ({err}); it must be UTF-8 JSON lines") from None
    if not lines:
        raise InputError(f"{path} is empty; it needs a header line and items")
    return lines


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
        fd = open_path(name, roots, dir_fd=dir_fd, shown=shown, folders=False)
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
