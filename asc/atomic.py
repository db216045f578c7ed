"""Atomic file writes: a reader sees the old file or the complete new one, never half of one.

Every result file the project writes (run chunks, probe results, features, attention runs, prepared
studies, CSV exports) goes through :func:`write_atomic`: the content is written to a hidden temporary
file in the same folder, then renamed over the target (``os.replace`` is atomic on one filesystem).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` then rename ``tmp`` to ``path``; the folder is created, a failed write leaves nothing.

    The temporary name keeps ``path``'s suffix, so writers that append one (``np.save``) do not rename it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}-{threading.get_ident()}.tmp{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
