"""The one answer to "has this result changed on disk?": a stamp over a list of files.

Every cache of a run, a probe run or a task set is keyed by the stamp of the files it reads, so a job that
adds a part, rewrites a prediction file or scores another task shows at the next rerun, and nothing else
re-reads a file. The stamp covers each file's path, size and modification time (nanoseconds), so adding,
removing or rewriting any one of them changes it; a file removed between listing and reading is left out
(the next stamp differs, and the loader says what is missing).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def change_stamp(files: Iterable[Path]) -> str:
    """A key that changes when a file of ``files`` is added, removed or rewritten (order does not matter)."""
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(files):
        try:
            info = path.stat()
        except OSError:  # removed meanwhile: left out, so the stamp still changes
            continue
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def run_stamp(path: Path) -> str:
    """The stamp of a corpus run: its ``meta.json`` and every snippets part (a growing run gains one per chunk)."""
    return change_stamp([path / "meta.json", *(path / "snippets").glob("part-*.parquet")])
