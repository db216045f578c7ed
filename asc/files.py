"""Paths users name (command-line arguments, corpus specs, uploads), checked before anything is read or written.

Each check raises :class:`asc.errors.InputError` with one line that says what the path is and what to give
instead, where the operating system would answer with a bare ``OSError`` (or hang):

* :func:`check_path_text`: a NUL character, a name part over :data:`MAX_NAME_BYTES` bytes or a path over
  :data:`MAX_PATH_BYTES` bytes (``ENAMETOOLONG``), refused from the text alone;
* :func:`kind_of` names what a file is (a folder, a named pipe, a device) for the messages of
  :mod:`asc.confined`, which reads them (opening a user's file without opening a FIFO or a device, within a size
  bound: :func:`asc.confined.read_fd`, the one bounded reader);
* :func:`existing_path`: a path that must exist (a run folder), with a symlink loop or a missing path named;
* :func:`check_out_file`: where a table will be written: its folder exists and is writable, it is no folder;
* :func:`os_error_message`: one line for an ``OSError`` met anyway (a job's log, the CLI), without traceback.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from asc.errors import InputError

__all__ = ["MAX_NAME_BYTES", "MAX_PATH_BYTES", "check_out_file", "check_path_text", "existing_path", "kind_of",
           "os_error_message", "shown"]

MAX_NAME_BYTES = 255  # one part of a path (NAME_MAX of Linux and macOS file systems)
MAX_PATH_BYTES = 4095  # the whole path (PATH_MAX 4096 with its terminating NUL on Linux)
_SHOWN = 160  # characters of a path shown in messages (a 4,095-byte path is cut in the middle)


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` for a message: NUL and control characters escaped, at most :data:`_SHOWN` characters."""
    text = repr(os.fspath(path))[1:-1]
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN - 30]}...{text[-27:]}"


def check_path_text(path: str | os.PathLike[str], what: str = "path") -> None:
    """InputError when the text of ``path`` cannot name a file: a NUL character, or too long for the file system."""
    text = os.fspath(path)
    if "\0" in text:
        raise InputError(f"the {what} {shown(text)} contains a NUL character: give a path without it")
    data = os.fsencode(text)
    longest = max((len(part) for part in data.split(b"/")), default=0)
    if longest > MAX_NAME_BYTES:
        raise InputError(f"the {what} {shown(text)} has a name of {longest} bytes; file systems take at most "
                         f"{MAX_NAME_BYTES}: give a shorter path")
    if len(data) > MAX_PATH_BYTES:
        raise InputError(f"the {what} {shown(text)} has {len(data)} bytes; paths take at most {MAX_PATH_BYTES}: "
                         "give a shorter path")


def kind_of(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, for a message: ``a folder``, ``a named pipe (FIFO)``, ..."""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a file"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def os_error_message(err: OSError, path: str | os.PathLike[str] | None = None) -> str:
    """One line for ``err`` met on ``path`` (default: the error's own file name), naming the fix."""
    where = shown(path if path is not None else err.filename if err.filename is not None else "the file")
    fixes = {
        errno.ENOENT: "was not found: check the path",
        errno.ENOTDIR: "was not found (a part of the path is a file, not a folder): check the path",
        errno.ELOOP: "is a symlink loop (a link that leads back to itself): give the file or folder itself",
        errno.ENAMETOOLONG: "is too long a path for the file system: give a shorter path",
        errno.EACCES: "cannot be opened (permission denied): give a path you may use",
        errno.EPERM: "cannot be opened (operation not permitted): give a path you may use",
        errno.EISDIR: "is a folder: give a file",
        errno.ENOSPC: "cannot be written: no space is left on its device; free some space",
        errno.EROFS: "cannot be written (read-only file system): give a path you may write",
    }
    fix = fixes.get(err.errno or 0)
    return f"{where} {fix}" if fix else f"{where}: {(err.strerror or str(err)).rstrip('.').lower()}"


def existing_path(path: str | os.PathLike[str], what: str = "path") -> Path:
    """``path`` resolved (links and ``..``), or an InputError: not found, a symlink loop, too long, no permission."""
    check_path_text(path, what)
    try:
        os.stat(path)
        return Path(path).resolve()
    except FileNotFoundError:
        raise InputError(f"{what} not found: {shown(path)}") from None
    except OSError as err:
        raise InputError(os_error_message(err, path)) from None
    except RuntimeError:  # Path.resolve on a loop met after the stat (changed meanwhile)
        raise InputError(os_error_message(OSError(errno.ELOOP, "loop"), path)) from None


def check_out_file(path: str | os.PathLike[str]) -> None:
    """InputError unless a file can be written at ``path``: a usable name, an existing folder that this user may
    write, and no folder (or other non-file) at ``path`` itself. Checked before any work; the write itself may
    still fail (inside ``/proc``, a full disk): writers turn that into one line too."""
    check_path_text(path)
    target = Path(path)
    parent = target.parent
    try:
        if target.exists() and not target.is_file():
            raise InputError(f"{shown(path)} is {kind_of(target.stat().st_mode)}: give a file name, e.g. "
                             f"{shown(target / 'table.csv')}")
        if not parent.is_dir():
            raise InputError(f"{shown(path)}: the folder {shown(parent)} does not exist: create it first, or give "
                             "a path in an existing folder")
    except OSError as err:
        raise InputError(os_error_message(err, path)) from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{shown(path)}: the folder {shown(parent)} is not writable: give a path in a folder you "
                         "may write")
