"""Atomic file writes: a reader sees the old file or the complete new one, never half of one; private files on a
shared server.

Every result file the project writes (run chunks, probe results, features, attention runs, prepared
studies, CSV exports) goes through :func:`write_atomic`: the content is written to a hidden temporary
file in the same folder, then renamed over the target (``os.replace`` is atomic on one filesystem).

**Private writes** (:func:`private_writes`, turned on by the app when it is shared: :func:`ui.access.protect_files`).
Run folders hold what visitors' corpora contained; other accounts of the server machine must not read them.
Two layers, both on for the whole process:

* the process's umask becomes ``077``, so *every* file and folder this process creates is ``0600``/``0700``:
  run folders, SQLite files of the study, the Parquet, NumPy and Hugging Face writers that do not go through
  :func:`write_atomic`. The umask is per process, shared by its threads: that is the scope wanted, since
  shared or local is decided once per server process (its address and ``ASC_*`` variables), and the
  background jobs run as threads of that process. Local mode never touches the umask (the user's stays);
* explicitly, whatever the umask: :func:`write_atomic` creates missing folders ``0700`` and the temporary
  file ``0600`` *before* the content goes in (no moment where it is readable by others), and sets ``0600``
  again before the rename (a writer may have replaced the file). Folders that existed before are left as they are.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["is_private", "private_writes", "write_atomic"]

_state: dict[str, int | None] = {"umask": None}  # the umask before private writes began (None: not private)
_lock = threading.Lock()


def private_writes(on: bool = True) -> None:
    """Turn private writes on (umask 077 and explicit modes, see the module doc) or off (the umask from before
    comes back; when they were never on, nothing changes)."""
    with _lock:
        if on and _state["umask"] is None:
            _state["umask"] = os.umask(0o077)
        elif not on and _state["umask"] is not None:
            os.umask(_state["umask"])
            _state["umask"] = None


def is_private() -> bool:
    """Whether this process writes privately (:func:`private_writes`)."""
    return _state["umask"] is not None


def _make_folders(folder: Path, private: bool) -> None:
    if not private:
        folder.mkdir(parents=True, exist_ok=True)
        return
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:  # made meanwhile by another writer
            continue
        os.chmod(path, 0o700)  # whatever the umask


def write_atomic(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` then rename ``tmp`` to ``path``; the folder is created, a failed write leaves nothing.

    The temporary name keeps ``path``'s suffix, so writers that append one (``np.save``) do not rename it.
    With private writes on, new folders are ``0700`` and the file ``0600`` from its creation on.
    """
    path = Path(path)
    private = is_private()
    _make_folders(path.parent, private)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}-{threading.get_ident()}.tmp{path.suffix}")
    try:
        if private:  # created empty and private first: the writer truncates it and keeps the mode
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600))
            os.chmod(tmp, 0o600)
        write(tmp)
        if private:
            os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
