"""The app's caches (:func:`asc.paths.cache_dir`): private folders whose entries are data, never code.

A cache entry is something the app wrote once and reads again without redoing the work: the de-quantized weights
of a GGUF model (``models/<key>/``, :mod:`asc.models`) and mypy's output over a corpus (``gluecode/mypy/``,
:mod:`probes.gluecode.nullcheck`). Anyone who can write into a cache can make the app read what they wrote:
a planted model entry whose ``config.json`` carries an ``auto_map`` made transformers import a module of the entry
(code run as the loading user), and a planted entry with random weights was served as SmolLM2. So:

* **Private folders** (:func:`private_folder`): the cache root and each folder under it that the app uses are
  created ``0700``; one that exists must be owned by this user (or root) and not writable by group or others, or
  the app refuses it in one line naming the fix (``chmod 700``, or ``ASC_CACHE_DIR`` on a folder of one's own).
  Files inside must be this user's (or root's); their own modes do not matter, since nobody else can reach them.
  A lab that wants to share de-quantized weights shares the GGUF file, not the cache: each user's first load
  de-quantizes it once into their own cache.
* **Entries are data** (:func:`check_entry`): a model entry holds only the files the app writes (JSON,
  safetensors, the tokenizer's files), no ``.py`` file, no ``auto_map`` in any JSON file, no link, each file
  owned by this user (or root), each folder private; it is loaded with remote code off whatever the caller asked.
* **Digests** (:func:`write_manifest`, :func:`verify_manifest`): the app writes ``asc-manifest.json`` with the
  size and SHA-256 of every file of the entry when it creates it; a load checks the entry against it (once per
  process and file version: one read of the weights, under a second for the embedded models), so a damaged, cut or
  swapped file is found.
  An entry that fails is not loaded; :mod:`asc.models` de-quantizes again and replaces it.

The digests alone would not stop a user who can write the folder (they can rewrite the manifest too): privacy is
what keeps others out, the digests what keeps a broken entry from being served.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from pathlib import Path

from asc.atomic import write_atomic
from asc.errors import AscError

__all__ = ["MANIFEST", "CacheError", "check_entry", "check_file", "private_folder", "seal_entry", "verify_manifest",
           "write_manifest"]

MANIFEST = "asc-manifest.json"  # the digests of an entry's files, written by the app when it creates the entry
_MANIFEST_VERSION = 1
_CHUNK = 1 << 22
_VERIFIED: set[tuple[str, int, int, int]] = set()  # (path, inode, size, mtime_ns) of files whose digest matched
_NO_AUTO_MAP: set[tuple[str, int, int, int]] = set()  # the same, of JSON files found without an auto_map
_LOCK = threading.Lock()


class CacheError(AscError):
    """A cache folder or entry that the app refuses to use (not private, or not what the app wrote)."""


def _fix_for(folder: Path) -> str:
    return (f"run `chmod 700 {folder}` if it is yours, or set ASC_CACHE_DIR to a folder only you can write "
            "(share GGUF files between users, not the cache)")


def _check_owner(path: Path, st: os.stat_result, what: str) -> None:
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is not None and st.st_uid not in (uid, 0):
        raise CacheError(f"the {what} {path} belongs to another user (uid {st.st_uid}): the app reads no cache "
                         "others can write; delete it, or set ASC_CACHE_DIR to a folder only you can write (share "
                         "GGUF files between users, not the cache)")
    if stat.S_ISDIR(st.st_mode) and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheError(f"the {what} {path} is writable by other users (mode {stat.S_IMODE(st.st_mode):04o}): "
                         f"{_fix_for(path)}")


def private_folder(folder: Path) -> Path:
    """``folder`` created ``0700`` where missing (parents too), and checked: a folder (a link to one is followed)
    owned by this user or root and not writable by group or others, else a :class:`CacheError` naming the fix."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    except OSError as err:
        raise CacheError(f"cannot create the cache folder {folder} ({err.strerror or err}): set ASC_CACHE_DIR to "
                         "a folder you can write") from err
    if not stat.S_ISDIR(st.st_mode):
        raise CacheError(f"the cache folder {folder} is not a folder: remove it, or set ASC_CACHE_DIR elsewhere")
    _check_owner(folder, st, "cache folder")
    return folder


def check_file(path: Path) -> None:
    """A :class:`CacheError` unless ``path`` is a plain file (not a link) owned by this user or root, in a folder
    checked by :func:`private_folder` (its own mode does not matter then: nobody else can reach it)."""
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode):
        raise CacheError(f"the cache file {path} is not a plain file (a link?): delete it")
    _check_owner(path, st, "cache file")


def seal_entry(entry: Path, about: dict[str, object]) -> None:
    """Make a new entry private whatever the umask (folders ``0700``, files ``0600``) and write its manifest."""
    for path in [entry, *entry.rglob("*")]:
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
    write_manifest(entry, about)
    os.chmod(entry / MANIFEST, 0o600)


def check_entry(entry: Path) -> None:
    """A :class:`CacheError` unless ``entry`` is a private folder of plain data files: no link, no ``.py`` file (or
    any other file Python would import), no ``auto_map`` in a JSON file, every file and folder owned by this user
    (or root), every folder not writable by others."""
    private_folder(entry)
    for path in sorted(entry.rglob("*")):
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            raise CacheError(f"the cache entry {entry} holds a link ({path.name}): an entry the app wrote holds "
                             f"none; delete {entry} and load the model again")
        _check_owner(path, st, "cache file" if stat.S_ISREG(st.st_mode) else "cache folder")
        if path.suffix in (".py", ".pyc", ".pyw", ".so", ".pth"):
            raise CacheError(f"the cache entry {entry} holds code ({path.name}): an entry is data only; delete "
                             f"{entry} and load the model again")
        if path.suffix == ".json" and stat.S_ISREG(st.st_mode) and _has_auto_map(path, st):
            raise CacheError(f"the cache entry {entry} names code to run ({path.name} has an auto_map): an entry "
                             f"the app wrote has none; delete {entry} and load the model again")


def _has_auto_map(path: Path, st: os.stat_result) -> bool:
    """Whether the JSON file ``path`` (of stat ``st``) has an ``auto_map`` key at any depth. A file version found
    without one is remembered for the process (as the digests are): a tokenizer.json of a few MB took 0.1-0.2 s to
    parse and walk, on every load of a cached model."""
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    with _LOCK:
        if key in _NO_AUTO_MAP:
            return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # not JSON the loader could read either
    found = _finds(data, "auto_map")
    if not found:
        with _LOCK:
            _NO_AUTO_MAP.add(key)
    return found


def _finds(data: object, key: str) -> bool:
    if isinstance(data, dict):
        return key in data or any(_finds(v, key) for v in data.values())
    if isinstance(data, list):
        return any(_finds(v, key) for v in data)
    return False


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _files(entry: Path) -> list[Path]:
    return sorted(p for p in entry.rglob("*") if p.is_file() and p.name != MANIFEST)


def write_manifest(entry: Path, about: dict[str, object]) -> None:
    """Write ``entry``/:data:`MANIFEST`: ``about`` (where the entry came from) and each file's size and SHA-256."""
    files = {p.relative_to(entry).as_posix(): {"size": p.stat().st_size, "sha256": _digest(p)} for p in _files(entry)}
    record = {"version": _MANIFEST_VERSION, **about, "files": files}
    write_atomic(entry / MANIFEST, lambda tmp: tmp.write_text(json.dumps(record, indent=1), encoding="utf-8"))


def verify_manifest(entry: Path) -> str:
    """"" when ``entry`` holds exactly the files its manifest lists, each of the listed size and SHA-256; else why
    not (no manifest, a file missing, added, changed). A file's digest is computed once per process and version of
    the file (its inode, size and modification time)."""
    try:
        record = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
        listed = dict(record["files"])
        if record.get("version") != _MANIFEST_VERSION:
            return "its manifest is of another version"
    except (OSError, ValueError, KeyError, TypeError):
        return f"it has no readable {MANIFEST} (an entry from an older version, or not written by the app)"
    present = {p.relative_to(entry).as_posix(): p for p in _files(entry)}
    if set(present) != set(listed):
        extra, missing = sorted(set(present) - set(listed)), sorted(set(listed) - set(present))
        return f"its files differ from its manifest (added: {extra[:3]}, missing: {missing[:3]})"
    for rel, path in present.items():
        st = path.stat()
        expected = listed[rel]
        if not isinstance(expected, dict) or st.st_size != expected.get("size"):
            return f"{rel} has another size than when the app wrote it"
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        with _LOCK:
            known = key in _VERIFIED
        if not known:
            if _digest(path) != expected.get("sha256"):
                return f"{rel} has other bytes than when the app wrote it"
            with _LOCK:
                _VERIFIED.add(key)
    return ""
