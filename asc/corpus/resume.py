"""What makes writing into a run folder safe: the corpus identity, the resume checks, one writer at a time.

:func:`asc.corpus.runs.run_corpus` uses these:

* :func:`corpus_identity`: the planned snippets' ids and the sha256 of their sources, and a digest over
  them (``corpus.json``; meta.json keeps the digest);
* :func:`settings_differences` and :func:`check_corpus`: a folder is resumed only with the same format,
  model (its dtype included, but on any device), aggregate, alignment options, max_window, ``--per-layer`` and
  ``--forks`` (with its thresholds), and a plan that still holds every done snippet unchanged; otherwise a :class:`asc.errors.CorpusError` says what differs and
  names the fix (``--dtype X`` to continue, or another ``--out``);
* :func:`writer_lock`: an exclusive ``flock`` on ``<folder>/.lock`` taken with timeout 0 (a second
  writer is refused at once) that the kernel releases when its process ends, however it ends;
* :func:`remove_unstarted`: a fresh folder whose run ends before its first chunk is removed again.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from asc.corpus.sources import Snippet
from asc.errors import CorpusError

__all__ = ["SETTINGS_KEYS", "check_corpus", "corpus_identity", "remove_unstarted", "settings_differences",
           "source_digest", "writer_lock"]

SETTINGS_KEYS = ("format", "model", "aggregate", "align", "max_window", "layers", "forks")  # must match to resume a folder


def source_digest(text: str) -> str:
    """sha256 (hex) of a snippet's source as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corpus_identity(snippets: Sequence[Snippet]) -> dict:
    """``{"digest", "snippets": [{"id", "sha256"}, ...]}``: what corpus.json holds. The digest covers the ids and
    the sha256 of the sources, in order (not the spec: the same snippets named two ways are one corpus)."""
    listed = [{"id": s.id, "sha256": source_digest(s.source)} for s in snippets]
    digest = hashlib.sha256(json.dumps([[x["id"], x["sha256"]] for x in listed]).encode("utf-8")).hexdigest()
    return {"digest": digest, "snippets": listed}


def settings_differences(old: Any, new: Mapping[str, Any]) -> list[str]:
    """``key: old there, new here`` for each of :data:`SETTINGS_KEYS` that differs (one level into dicts such as
    the model's description, e.g. ``model.name: 'a' there, 'b' here``).

    The model's ``device`` is not compared: a folder started on one device (``cuda:0``, ``cpu``, ``auto-map``)
    may be resumed on another in the same dtype, because a model gives the same values on any device up to
    floating-point rounding (different kernels sum in different orders; far below the bfloat16/float32
    tolerances in docs/models.md). Its ``dtype`` must match: a difference names the fix (``--dtype X`` to
    continue, or a new ``--out`` folder). A description without a dtype comes from before dtypes were
    recorded, when every run was float32."""
    old = old if isinstance(old, dict) else {}
    out = []
    for key in SETTINGS_KEYS:
        a, b = old.get(key), new.get(key)
        if key == "model" and isinstance(a, dict) and isinstance(b, dict):
            a, b = _placement_free(a), _placement_free(b)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += [_difference(f"{key}.{k}", a.get(k), b.get(k)) for k in sorted(set(a) | set(b))
                    if a.get(k) != b.get(k)]
        else:
            out.append(_difference(key, a, b))
    return out


def _placement_free(model: Mapping[str, Any]) -> dict[str, Any]:
    """A model description without its device, with ``dtype`` float32 where it was not recorded yet."""
    return {k: v for k, v in model.items() if k != "device"} | {"dtype": model.get("dtype") or "float32"}


def _difference(name: str, there: Any, here: Any) -> str:
    text = f"{name}: {there!r} there, {here!r} here"
    if name == "model.dtype" and isinstance(there, str):
        text += f" (continue it with --dtype {there}, the sidebar's Dtype in the app, or start a new --out folder)"
    return text


def check_corpus(out: Path, done: Mapping[str, str], snippets: Sequence[Snippet]) -> None:
    """CorpusError when a done snippet (id -> sha256 of its source) is missing from the plan or changed since."""
    plan = {s.id: source_digest(s.source) for s in snippets}
    missing = sorted(i for i in done if i not in plan)
    if missing:
        raise CorpusError(f"{out} was made from another corpus: {len(missing)} of its snippets are not in this corpus "
                          f"(e.g. {missing[0]!r}); use another --out (or the same corpus, with a --limit at least as "
                          "large as before)")
    changed = sorted(i for i, h in done.items() if plan[i] != h)
    if changed:
        raise CorpusError(f"{out} was made from another version of this corpus: snippet {changed[0]!r} changed since "
                          f"({len(changed)} changed in all); use another --out, or delete this folder")


@contextmanager
def writer_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``out/.lock`` (timeout 0: CorpusError when another writer holds it). The kernel
    releases it when the process ends, so a killed run never leaves a stale lock."""
    import fcntl

    fd = os.open(out / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise
            raise CorpusError(f"another evaluation is writing into {out} right now: wait until it ends, or use "
                              "another --out") from None
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def remove_unstarted(out: Path, tables: Iterable[str], created: bool) -> None:
    """Remove what a run wrote into a fresh folder before its first chunk (the folder too, if the run made it)."""
    for name in ("meta.json", "corpus.json"):
        (out / name).unlink(missing_ok=True)
    for table in tables:
        shutil.rmtree(out / table, ignore_errors=True)
    if created:
        (out / ".lock").unlink(missing_ok=True)
        try:
            out.rmdir()
        except OSError:  # something else was put there meanwhile: leave it
            pass
