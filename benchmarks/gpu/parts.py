"""Files too big for one GPU command, cut into numbered parts and put together again on the GPU machine, checksummed.

One command to the GPU machine carries at most 64 MiB (the working tree included); files left on that machine
stay while it is held. :func:`split` (here) reads a list of files as one byte stream, in order, and cuts it into
parts of ``part_bytes``: part ``i`` goes to ``<root>/.gpu-part<i>/`` as ``part.bin`` with ``manifest.json``, the
same manifest in every part (the payload's id, each file's name, size, SHA-256 and offset in the stream, each
part's size and SHA-256). A file spans one or more parts, so a file early in the list is whole before the last
part arrives.

On the GPU machine, :func:`receive` copies the carried parts into a store (each checked against its SHA-256 first;
parts of another payload are kept apart by the id) and :func:`assemble` writes every file whose parts are all
held, checks its SHA-256 and only then renames it into place, so a file is either whole and verified or absent.
:class:`Held` says which parts and files are there and which parts each missing file still needs.

Standard library only: it runs before any wheel is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PART_PREFIX = ".gpu-part"
PART_FILE = "part.bin"
MANIFEST = "manifest.json"
_BLOCK = 1 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _replace_with(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def part_folders(root: Path) -> list[Path]:
    """The ``.gpu-part<i>`` folders directly under ``root``, by number."""
    found = [p for p in root.glob(f"{PART_PREFIX}*") if p.is_dir() and p.name[len(PART_PREFIX):].isdigit()]
    return sorted(found, key=lambda p: int(p.name[len(PART_PREFIX):]))


def split(files: Sequence[tuple[str, Path]], root: Path, part_bytes: int) -> dict[str, Any]:
    """Cut ``files`` (payload name, path) into parts of at most ``part_bytes`` under ``root/.gpu-part<i>/``
    (earlier part folders there are removed first); returns the manifest."""
    if part_bytes < 1:
        raise ValueError(f"part_bytes={part_bytes}: give at least 1")
    entries, offset = [], 0
    for name, path in files:
        size = path.stat().st_size
        entries.append({"name": name, "size": size, "sha256": sha256_of(path), "offset": offset})
        offset += size
    total = offset
    n_parts = max(1, -(-total // part_bytes))
    for old in part_folders(root):
        shutil.rmtree(old)
    folders = [root / f"{PART_PREFIX}{i + 1}" for i in range(n_parts)]
    parts: list[dict[str, Any]] = []
    stream = _Stream(files)
    for i, folder in enumerate(folders):
        folder.mkdir(parents=True)
        size = min(part_bytes, total - i * part_bytes)
        digest = hashlib.sha256()
        with open(folder / PART_FILE, "wb") as out:
            left = size
            while left:
                block = stream.read(min(left, _BLOCK))
                if not block:
                    raise OSError(f"{files}: shorter than when they were measured; were they changed meanwhile?")
                out.write(block)
                digest.update(block)
                left -= len(block)
        parts.append({"index": i + 1, "offset": i * part_bytes, "size": size, "sha256": digest.hexdigest()})
    body = {"files": entries, "parts": parts, "total": total}
    manifest = {"payload": hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16], **body}
    for folder in folders:
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


class _Stream:
    """The files' bytes one after another, read in blocks."""

    def __init__(self, files: Sequence[tuple[str, Path]]) -> None:
        self.paths = [path for _, path in files]
        self.current: Any = None

    def read(self, n: int) -> bytes:
        while True:
            if self.current is None:
                if not self.paths:
                    return b""
                self.current = open(self.paths.pop(0), "rb")
            block = self.current.read(n)
            if block:
                return block
            self.current.close()
            self.current = None


def spans(manifest: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Per file of the payload, the first and the last part that hold its bytes (a file is whole once its last part
    has arrived, when the parts travel in order)."""
    out = {}
    for entry in manifest["files"]:
        start, end = entry["offset"], entry["offset"] + entry["size"]
        covering = [p["index"] for p in manifest["parts"] if p["offset"] < end and p["offset"] + p["size"] > start]
        out[entry["name"]] = (min(covering), max(covering)) if covering else (1, 1)
    return out


@dataclass
class Held:
    """What the store holds of one payload: parts (indices), whole files (names), and per missing file the parts
    it still needs."""

    manifest: dict[str, Any]
    parts: list[int] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    needs: dict[str, list[int]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)  # carried parts whose checksum did not match

    @property
    def n_parts(self) -> int:
        return len(self.manifest["parts"])

    def missing_parts(self) -> list[int]:
        return [p["index"] for p in self.manifest["parts"] if p["index"] not in self.parts]


def receive(sources: Iterable[Path], store: Path) -> Held | None:
    """Copy the parts in ``sources`` (``.gpu-part<i>`` folders) into ``store/<payload>/``, each checked against
    the manifest's SHA-256 first; returns what the store holds of the payload the newest carried part belongs to
    (of the payload received last, when none was carried; None when the store is empty)."""
    store.mkdir(parents=True, exist_ok=True)
    current, refused = None, []
    for folder in sources:
        manifest = json.loads((folder / MANIFEST).read_text())
        index = int(folder.name[len(PART_PREFIX):])
        want = next((p for p in manifest["parts"] if p["index"] == index), None)
        if want is None:
            refused.append(f"{folder.name} (its manifest has no part {index})")
            continue
        target = store / manifest["payload"]
        target.mkdir(exist_ok=True)
        current = manifest["payload"]
        if (target / f"part{index}.ok").is_file():
            continue
        if sha256_of(folder / PART_FILE) != want["sha256"]:
            refused.append(f"{folder.name} (its SHA-256 differs from the manifest's: send it again)")
            continue
        tmp = target / f".part{index}.tmp"
        shutil.copyfile(folder / PART_FILE, tmp)
        os.replace(tmp, target / f"part{index}.bin")
        (target / f"part{index}.ok").write_text(want["sha256"])
        _replace_with(target / MANIFEST, json.dumps(manifest).encode())
        _replace_with(store / "current", manifest["payload"].encode())
    if current is None and (store / "current").is_file():
        current = (store / "current").read_text().strip()
    if current is None or not (store / current / MANIFEST).is_file():
        return None
    _replace_with(store / "current", current.encode())
    manifest = json.loads((store / current / MANIFEST).read_text())
    held = Held(manifest, parts=sorted(int(p.stem[4:]) for p in (store / current).glob("part*.ok")), refused=refused)
    return held


def assemble(store: Path, held: Held, target: Path) -> Held:
    """Write into ``target`` every file of the payload whose parts are all held (SHA-256 checked before the rename;
    files already there and verified are kept); fills ``held.files`` and ``held.needs``."""
    target.mkdir(parents=True, exist_ok=True)
    folder = store / held.manifest["payload"]
    done_file = target / f".assembled-{held.manifest['payload']}.json"
    done: dict[str, str] = json.loads(done_file.read_text()) if done_file.is_file() else {}
    for entry in held.manifest["files"]:
        name, start, end = entry["name"], entry["offset"], entry["offset"] + entry["size"]
        covering = [p for p in held.manifest["parts"] if p["offset"] < end and p["offset"] + p["size"] > start]
        if entry["size"] == 0:
            covering = []
        if done.get(name) == entry["sha256"] and (target / name).is_file():
            held.files.append(name)
            continue
        missing = [p["index"] for p in covering if p["index"] not in held.parts]
        if missing:
            held.needs[name] = missing
            continue
        tmp = target / f".{name}.tmp"
        digest = hashlib.sha256()
        with open(tmp, "wb") as out:
            for p in covering:
                lo, hi = max(start, p["offset"]) - p["offset"], min(end, p["offset"] + p["size"]) - p["offset"]
                with open(folder / f"part{p['index']}.bin", "rb") as f:
                    f.seek(lo)
                    left = hi - lo
                    while left:
                        block = f.read(min(left, _BLOCK))
                        out.write(block)
                        digest.update(block)
                        left -= len(block)
        if digest.hexdigest() != entry["sha256"]:
            tmp.unlink()
            raise OSError(f"{name}: put together from its parts, its SHA-256 differs from the manifest's; delete "
                          f"{folder} and send the parts again")
        os.replace(tmp, target / name)
        done[name] = entry["sha256"]
        _replace_with(done_file, json.dumps(done).encode())
        held.files.append(name)
    return held
