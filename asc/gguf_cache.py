"""The de-quantized weights of GGUF models, kept as safetensors entries of the app's cache (``<cache>/models/``).

transformers de-quantizes a GGUF file on its first load (:func:`asc.models.load_model`); the fp32 model and its
tokenizer are saved here so later loads take seconds. The rules of :mod:`asc.caches` hold: the folders are
private, an entry is sealed (``0700``/``0600`` and a manifest of its files' SHA-256) when the app writes it, and
checked before every load: an entry with code in it (a ``.py`` file, an ``auto_map``), a link or another user's file
is refused with the fix; one that does not match its manifest (damaged, cut, swapped, or written by a version
before manifests) is set aside and de-quantized again.

The key (:func:`entry_for`) is the file's name, size, first and last MiB and the transformers version: every
copy of one GGUF (each clone's virtual environment has its own) shares one entry, where a key on the path made a
0.5-1.1 GB entry per clone. Other bytes at either end or another size (another quantization, a new download) get
their own; a copy changed only in its middle, at the same size, would read the old entry.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from asc.caches import CacheError, check_entry, private_folder, seal_entry, verify_manifest
from asc.paths import cache_dir

__all__ = ["entry_for", "entry_key", "save_entry", "usable_entry"]

log = logging.getLogger(__name__)

_KEY_BYTES = 1 << 20  # bytes read at each end of a GGUF for its cache key


def entry_key(path: Path) -> str:
    """The name of ``path``'s entry (see the module doc)."""
    import transformers

    size = path.stat().st_size
    digest = hashlib.sha256(f"{size}|{transformers.__version__}|".encode())
    with path.open("rb") as f:
        digest.update(f.read(_KEY_BYTES))
        f.seek(max(0, size - _KEY_BYTES))
        digest.update(f.read(_KEY_BYTES))
    return f"{path.stem}-{digest.hexdigest()[:16]}"


def entry_for(path: Path) -> Path | None:
    """The cache entry of the GGUF file ``path`` (which may not exist yet), in the private ``<cache>/models``
    folder (created ``0700``; a :class:`~asc.caches.CacheError` naming the fix when it or the cache root is
    another user's or writable by others). None when the folder cannot be made (a read-only home): the model is
    then loaded uncached, with a warning."""
    try:
        private_folder(cache_dir())
        return private_folder(cache_dir() / "models") / entry_key(path)
    except CacheError as err:
        if not isinstance(err.__cause__, OSError):
            raise
        log.warning("%s; loading uncached", err)
        return None


def usable_entry(entry: Path | None) -> bool:
    """Whether ``entry`` can be loaded: True for an entry the app wrote, unchanged; False when there is none, or
    when it does not match its manifest (it is then set aside and removed, so the caller writes it again). An
    entry carrying code, links or another user's files is refused (:class:`~asc.caches.CacheError`)."""
    if entry is None or (not entry.exists() and not entry.is_symlink()):
        return False
    check_entry(entry)
    why = verify_manifest(entry)
    if not why:
        return True
    log.warning("the cached weights at %s are not loaded: %s; de-quantizing again", entry, why)
    aside = entry.parent / f".stale-{entry.name}-{os.getpid()}-{threading.get_ident()}"
    try:
        os.replace(entry, aside)
        shutil.rmtree(aside, ignore_errors=True)
    except OSError as err:  # another process set it aside first
        log.warning("could not set %s aside: %s", entry, err)
    return False


def save_entry(model: Any, tokenizer: Any, entry: Path | None, origin: Path) -> None:
    """Save a de-quantized ``model`` and its ``tokenizer`` as ``entry``, sealed (:func:`asc.caches.seal_entry`),
    atomically (a concurrent loader sees the whole entry or none). A cache that cannot be written (a read-only
    home, a race with another process) is logged and skipped: the model is used uncached."""
    if entry is None:
        return
    model.hf_quantizer = None  # a GGUF-loaded model refuses save_pretrained while it carries its quantizer
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = entry.parent / f".tmp-{entry.name}-{os.getpid()}-{threading.get_ident()}"
    try:
        tmp.mkdir(mode=0o700)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        seal_entry(tmp, {"gguf": str(origin)})
        os.replace(tmp, entry)
    except OSError as err:
        log.warning("could not cache de-quantized weights at %s: %s", entry, err)
        shutil.rmtree(tmp, ignore_errors=True)
