"""A probing task and its file format: ``split<TAB>label<TAB>text`` rows, as INSPECT ships them.

:class:`Task` holds texts, integer labels and a split per row (``tr``/``va``/``te``: 60/20/20 when we
build them); it is frozen and its arrays are read-only. :func:`load_tsv` reads INSPECT's raw files
and the escaped files :meth:`Task.to_tsv` writes (a ``#asc-studio escaped`` first line; backslash,
newline, tab and CR escaped, so any text round-trips). Malformed rows are skipped with one warning
naming the first bad line; a file with no valid row, or labels/splits that do not fit, raise
:class:`asc.errors.InputError`.

:func:`parse_tsv` reads the same format from bytes in memory (an upload): the size is capped
(:data:`MAX_TASK_FILE_BYTES`) before anything is decoded, and the task name taken from the file name
(:func:`task_name`) keeps only ``[A-Za-z0-9_-]`` (at most 40 characters), so it never forms a path.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

import numpy as np

from asc.atomic import write_atomic
from asc.confined import read_user_file
from asc.errors import InputError

__all__ = ["MAX_TASK_FILE_BYTES", "TASK_SPLITS", "TSV_HEADER", "Task", "load_tsv", "parse_tsv", "store_upload", "task_name"]

log = logging.getLogger(__name__)

TASK_SPLITS = ("tr", "va", "te")
TSV_HEADER = "#asc-studio escaped"
MAX_TASK_FILE_BYTES = 50 * 1024 * 1024  # larger task files are refused before they are decoded
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _natural_key(label: str) -> list:
    return [int(c) if i % 2 else c for i, c in enumerate(re.split(r"(\d+)", label))]


@dataclass(frozen=True, eq=False)
class Task:
    name: str
    labels: tuple[str, ...]
    texts: tuple[str, ...]
    y: np.ndarray
    split: np.ndarray
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        y = np.array(self.y, dtype=np.int64).reshape(-1)  # copies: the caller's arrays stay writable
        split = np.array(self.split, dtype="<U2").reshape(-1)
        texts = tuple(self.texts)
        if not len(y) == len(split) == len(texts):
            raise InputError(f"task {self.name}: {len(texts)} texts, {len(y)} labels, {len(split)} splits")
        if len(y) and (y.min() < 0 or y.max() >= len(self.labels)):
            raise InputError(f"task {self.name}: label index out of range")
        if not set(split.tolist()) <= set(TASK_SPLITS):
            raise InputError(f"task {self.name}: splits must be among {TASK_SPLITS}")
        y.flags.writeable = split.flags.writeable = False
        for key, value in (("labels", tuple(self.labels)), ("texts", texts), ("y", y), ("split", split)):
            object.__setattr__(self, key, value)

    @property
    def n(self) -> int:
        return len(self.texts)

    @property
    def digest(self) -> str:
        payload = json.dumps([self.name, list(self.labels), list(self.texts), self.y.tolist(), self.split.tolist()])
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    def indices(self, split: str) -> np.ndarray:
        if split not in TASK_SPLITS:
            raise InputError(f"unknown split {split!r}: use one of {', '.join(TASK_SPLITS)}")
        return np.flatnonzero(self.split == split)

    def to_tsv(self, path: str | Path) -> None:
        """Write ``split<TAB>label<TAB>text`` rows after a ``#asc-studio escaped`` line; see the module doc."""
        rows = [TSV_HEADER] + [f"{s}\t{_escape(self.labels[c])}\t{_escape(t)}"
                               for s, c, t in zip(self.split.tolist(), self.y.tolist(), self.texts)]
        write_atomic(path, lambda tmp: tmp.write_text("\n".join(rows) + "\n", encoding="utf-8"))


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPES = {v[1]: k for k, v in _ESCAPES.items()}


def _escape(text: str) -> str:
    return re.sub(r"[\\\n\t\r]", lambda m: _ESCAPES[m.group()], text)


def _unescape(text: str) -> str:
    return re.sub(r"\\([\\ntr])", lambda m: _UNESCAPES[m.group(1)], text)


def task_name(file_name: str) -> str:
    """The task name of a file: its stem upper-cased, other characters than ``[A-Za-z0-9_-]`` replaced by ``_``,
    at most 40 characters (``UPLOAD`` when nothing is left). Folders in ``file_name`` are ignored."""
    stem = PurePosixPath(file_name.replace("\\", "/")).stem
    return _NAME_CHARS.sub("_", stem).strip("_-")[:40].strip("_-").upper() or "UPLOAD"


def parse_tsv(data: bytes, name: str, source: str = "upload") -> Task:
    """A task from the bytes of an INSPECT file (raw or escaped), named by :func:`task_name` of ``name``.

    ``source`` is recorded in ``meta`` and names the file in messages. Raises InputError for data over
    :data:`MAX_TASK_FILE_BYTES` (checked before decoding), invalid UTF-8 or no valid row.
    """
    if len(data) > MAX_TASK_FILE_BYTES:
        raise InputError(f"{source}: the task file has {len(data) / 2**20:.1f} MB; at most "
                         f"{MAX_TASK_FILE_BYTES / 2**20:.0f} MB are taken")
    try:
        decoded = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"{source}: not valid UTF-8 (byte {err.start}: {err.reason}); re-save it as UTF-8") from None
    lines = decoded.split("\n")  # no newline translation: a CR stays in its row
    if lines and lines[-1] == "":
        lines.pop()
    escaped = bool(lines) and lines[0].rstrip("\r") == TSV_HEADER
    rows, bad = [], []
    for lineno, line in enumerate(lines, 1):
        if escaped and lineno == 1:
            continue
        parts = line.rstrip("\r").split("\t", 2)
        if len(parts) != 3 or parts[0] not in TASK_SPLITS or not parts[1] or not parts[2].strip():
            bad.append(lineno)
            continue
        split, label, text = parts
        rows.append((split, _unescape(label) if escaped else label, _unescape(text) if escaped else text))
    if not rows:
        raise InputError(f"{source}: no valid 'split<TAB>label<TAB>text' row (split in {'/'.join(TASK_SPLITS)})")
    labels = tuple(sorted({r[1] for r in rows}, key=_natural_key))
    index = {label: i for i, label in enumerate(labels)}
    warnings = []
    if bad:
        warnings.append(f"{source}: skipped {len(bad)} malformed row(s) (wrong field count, unknown split or empty "
                        f"text), the first at line {bad[0]}")
        log.warning(warnings[-1])
    y = np.array([index[r[1]] for r in rows], dtype=np.int64)
    meta = {"source": source, "format": "asc-studio escaped" if escaped else "inspect raw",
            "skipped_rows": len(bad), "first_bad_line": bad[0] if bad else None, "warnings": warnings,
            "per_class": {lab: int((y == i).sum()) for i, lab in enumerate(labels)},
            "per_split": {s: sum(r[0] == s for r in rows) for s in TASK_SPLITS}}
    return Task(task_name(name), labels, tuple(r[2] for r in rows), y, np.array([r[0] for r in rows]), meta)


def store_upload(data: bytes, name: str, folder: str | Path) -> Task:
    """Parse an uploaded task file in memory (:func:`parse_tsv`), then keep its bytes as ``<folder>/<hash>.tsv``.

    The stored name is the first 16 hex digits of the content's SHA-256: the browser's ``name`` only names
    the task (:func:`task_name`), never a path. Nothing is written when the file does not parse.
    """
    digest = hashlib.sha256(data).hexdigest()[:16]
    target = Path(folder) / f"{digest}.tsv"
    task = parse_tsv(data, name, source=f"upload {target.name}")
    write_atomic(target, lambda tmp: tmp.write_bytes(data))
    return task


def load_tsv(path: str | Path, name: str | None = None) -> Task:
    """Read an INSPECT file (raw) or one written by :meth:`Task.to_tsv` (escaped); malformed rows are skipped.

    The task is named ``name``, or after the file (:func:`task_name`)."""
    path = Path(path)
    data = read_user_file(path, MAX_TASK_FILE_BYTES, "task file", fix="give a split<TAB>label<TAB>text file",
                          missing=f"{path}: task file not found")  # a folder, a FIFO, a device: said, never read
    task = parse_tsv(data, path.name, source=str(path))
    return replace(task, name=name) if name else task
