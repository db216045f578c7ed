"""BLANCA task items for Python and their file format (one JSONL file per task).

BLANCA (Abdelaziz et al., "Can Machines Read Coding Manuals Yet?", 2021) has five tasks on *text about code*:

- **R**, forum answer ranking: a question and its answers with relevance grades (:class:`RankItem`);
- **L**, linked vs unlinked posts, and **F**, forum text vs class documentation with hard negatives: a pair of
  texts labelled positive or negative (:class:`PairItem`; ``group`` ties F's hard negatives to their positive);
- **H**, class hierarchy distance, and **U**, usage similarity: two class documentations with a numeric target
  and the two class names (:class:`ScoredPairItem`).

File format (``*.jsonl``, UTF-8): the first line is a header object
``{"format": "asc-blanca", "version": 1, "task": "R", "provenance": {...}}`` (provenance free-form: source,
seed, sizes, the code's version). H and U headers may add ``"target": "distance"`` or ``"similarity"`` (the
defaults are distance for H, the MRO distance, and similarity for U, the Jaccard usage similarity of
:mod:`probes.blanca.usage`); the paper's own U files give a usage *distance*, so a converted file says so and
the evaluation flips the expected sign. Then one JSON object per item:

- R: ``{"id", "split", "question", "answers": [...], "grades": [...], "meta"?}``; two answers or more,
  grades >= 0 (StackOverflow votes, shifted if negative, or 1/0 relevance), at least one grade above 0;
- L, F: ``{"id", "split", "text_a", "text_b", "positive": true|false, "group"?, "name_a"?, "name_b"?, "meta"?}``;
- H, U: ``{"id", "split", "text_a", "text_b", "target": number, "name_a", "name_b", "meta"?}``; an H target
  that is a distance is a whole number >= 1.

``split`` is ``train`` or ``test`` (the paper splits 90/10 at random; our builders use :func:`split_of`, a stable
hash of a unit key, so re-building gives the same split). A row may repeat ``"task"``, which must then match the
header. :func:`load_items` validates every line and raises a :class:`~asc.errors.InputError` naming the file, the
line and the fix; :func:`save_items` writes atomically.

Bring your own data: the original BLANCA files (Graph4Code-derived, from the paper's repository) or a
StackOverflow dump convert to this format with a few lines of Python (questions with their answers and votes for
R, linked post pairs for L, post/docstring pairs for F, class pairs with distances for H and U); the builders of
:mod:`probes.blanca.faq`, :mod:`probes.blanca.classes` and :mod:`probes.blanca.usage` write the same format
from the Python documentation and standard library.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from asc.atomic import write_atomic
from asc.confined import MAX_READ_BYTES, read_user_lines
from asc.errors import InputError

__all__ = ["BLANCA_FORMAT", "BLANCA_SPLITS", "BLANCA_TASKS", "BLANCA_TASK_TITLES", "BlancaItem", "PairItem",
           "RankItem", "ScoredPairItem", "load_items", "save_items", "split_of", "target_kind"]

BLANCA_FORMAT = "asc-blanca"
VERSION = 1
BLANCA_TASKS = ("R", "L", "F", "H", "U")
BLANCA_SPLITS = ("train", "test")
BLANCA_TASK_TITLES = {"R": "forum answer ranking", "L": "linked vs unlinked posts",
                      "F": "forum text vs class documentation", "H": "class hierarchy distance",
                      "U": "class usage similarity"}
TARGET_KINDS = ("distance", "similarity")
DEFAULT_TARGET = {"H": "distance", "U": "similarity"}


@dataclass(frozen=True)
class RankItem:
    """One R question: its answers and their relevance ``grades`` (same order; higher is better)."""

    id: str
    split: str
    question: str
    answers: tuple[str, ...]
    grades: tuple[float, ...]
    meta: dict[str, Any] = field(default_factory=dict)
    task: str = "R"


@dataclass(frozen=True)
class PairItem:
    """One L or F pair: two texts and whether they belong together (``positive``). For F, ``text_a`` is the
    forum text, ``text_b`` the documentation of ``name_b``, and ``group`` names the positive that a hard negative
    was drawn for (the positive and its negatives share it)."""

    task: str
    id: str
    split: str
    text_a: str
    text_b: str
    positive: bool
    group: str = ""
    name_a: str = ""
    name_b: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoredPairItem:
    """One H or U pair: the documentation of classes ``name_a`` and ``name_b`` and the ``target`` (H: MRO distance;
    U: usage similarity, unless the file's header says otherwise)."""

    task: str
    id: str
    split: str
    text_a: str
    text_b: str
    target: float
    name_a: str
    name_b: str
    meta: dict[str, Any] = field(default_factory=dict)


BlancaItem = RankItem | PairItem | ScoredPairItem
_KIND: dict[str, type[RankItem] | type[PairItem] | type[ScoredPairItem]] = {"R": RankItem, "L": PairItem, "F": PairItem, "H": ScoredPairItem, "U": ScoredPairItem}


def split_of(unit: str, test_share: float = 0.1) -> str:
    """``train`` or ``test`` for a split unit (a question id, a pair id), from a stable SHA-256 hash of it."""
    value = int(hashlib.sha256(unit.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if value < test_share else "train"


def target_kind(header: dict) -> str:
    """``distance`` or ``similarity``: what an H or U file's targets are (the header's ``target`` or the default)."""
    return str(header.get("target") or DEFAULT_TARGET.get(str(header.get("task")), ""))


def _text(row: dict, key: str, where: str, required: bool = True) -> str:
    value = row.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise InputError(f"{where}: {key} must be {'non-empty ' if required else ''}text")
    return value


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check(row: dict, task: str, target: str, where: str) -> BlancaItem:
    kind = _KIND[task]
    if row.get("task", task) != task:
        raise InputError(f"{where}: task {row.get('task')!r} in a {task} file; one task per file")
    unknown = set(row) - set(kind.__dataclass_fields__)
    if unknown:
        raise InputError(f"{where}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))} for "
                         f"task {task}; its fields are {', '.join(f for f in kind.__dataclass_fields__ if f != 'task')}")
    ident, split = _text(row, "id", where), _text(row, "split", where)
    if split not in BLANCA_SPLITS:
        raise InputError(f"{where}: split {split!r} is not one of {', '.join(BLANCA_SPLITS)}")
    meta = row.get("meta", {})
    if not isinstance(meta, dict):
        raise InputError(f"{where}: meta must be an object")
    if kind is RankItem:
        answers, grades = row.get("answers"), row.get("grades")
        if not isinstance(answers, list) or len(answers) < 2 or not all(isinstance(a, str) and a.strip() for a in answers):
            raise InputError(f"{where}: answers must be a list of two or more non-empty texts")
        if not isinstance(grades, list) or len(grades) != len(answers) or not all(_number(g) for g in grades):
            raise InputError(f"{where}: grades must be a list of numbers, one per answer ({len(answers)})")
        if min(grades) < 0 or max(grades) <= 0:
            raise InputError(f"{where}: grades must be >= 0 with at least one above 0 (shift negative votes up, "
                             "or give 1 to the relevant answers and 0 to the others)")
        return RankItem(ident, split, _text(row, "question", where), tuple(answers), tuple(float(g) for g in grades),
                        meta)
    texts = {k: _text(row, k, where) for k in ("text_a", "text_b")}
    if kind is PairItem:
        if not isinstance(row.get("positive"), bool):
            raise InputError(f"{where}: positive must be true or false")
        names = {k: _text(row, k, where, required=False) for k in ("group", "name_a", "name_b")}
        return PairItem(task, ident, split, **texts, positive=row["positive"], **names, meta=meta)
    value = row.get("target")
    if not _number(value):
        raise InputError(f"{where}: target must be a finite number")
    if task == "H" and target == "distance" and (value < 1 or value != int(value)):
        raise InputError(f"{where}: an H distance is a whole number >= 1 (got {value}); pairs of one class are left out")
    names = {k: _text(row, k, where) for k in ("name_a", "name_b")}
    return ScoredPairItem(task, ident, split, **texts, target=float(value), **names, meta=meta)


def _header(row: Any, path: Path) -> dict:
    if (not isinstance(row, dict) or row.get("format") != BLANCA_FORMAT or row.get("version") != VERSION
            or row.get("task") not in BLANCA_TASKS):
        raise InputError(f"{path}, line 1: not a BLANCA task file header (expected {{\"format\": \"{BLANCA_FORMAT}\", "
                         f"\"version\": {VERSION}, \"task\": one of {', '.join(BLANCA_TASKS)}, \"provenance\": {{...}}}})")
    if not isinstance(row.get("provenance", {}), dict):
        raise InputError(f"{path}, line 1: provenance must be an object")
    target = row.get("target")
    if target is not None and (row["task"] not in DEFAULT_TARGET or target not in TARGET_KINDS):
        raise InputError(f"{path}, line 1: target {target!r}: only H and U files have one, "
                         f"{' or '.join(TARGET_KINDS)}")
    return {**row, "provenance": row.get("provenance", {})}


def load_items(path: str | Path) -> tuple[dict, list[BlancaItem]]:
    """The header and the items of a task file; any problem is an :class:`InputError` naming the line."""
    path = Path(path)
    lines = read_user_lines(path, MAX_READ_BYTES, "task file", fix="give a BLANCA task file (JSON lines)",
                          missing=f"{path}: no such BLANCA task file; build one or convert your data (see "
                                  "probes.blanca.items)")
    header: dict = {}
    items: list[BlancaItem] = []
    seen: set[str] = set()
    for n, line in enumerate(lines, 1):
        if not line.strip() and n > 1:
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"{path}, line {n}: not JSON ({err.msg}); one JSON object per line") from None
        if n == 1:
            header = _header(row, path)
            continue
        if not isinstance(row, dict):
            raise InputError(f"{path}, line {n}: a JSON object is expected")
        item = _check(row, header["task"], target_kind(header), f"{path}, line {n}")
        if item.id in seen:
            raise InputError(f"{path}, line {n}: id {item.id!r} is used twice; ids must be unique")
        seen.add(item.id)
        items.append(item)
    return header, items


def _row(item: BlancaItem) -> dict:
    row = {k: getattr(item, k) for k in type(item).__dataclass_fields__ if k != "task"}
    for key in ("answers", "grades"):
        if key in row:
            row[key] = list(row[key])
    optional = ("meta", "group", "name_a", "name_b") if isinstance(item, PairItem) else ("meta",)
    return {k: v for k, v in row.items() if k not in optional or v not in ("", {})}


def save_items(path: str | Path, task: str, items: Iterable[BlancaItem], provenance: dict | None = None,
               target: str | None = None) -> Path:
    """Write a task file atomically (header then items); returns the path. ``target`` (H, U only) is written to
    the header when it differs from the task's default."""
    if task not in BLANCA_TASKS:
        raise InputError(f"task {task!r}: choose one of {', '.join(BLANCA_TASKS)}")
    header: dict[str, Any] = {"format": BLANCA_FORMAT, "version": VERSION, "task": task, "provenance": provenance or {}}
    if target is not None:
        if task not in DEFAULT_TARGET or target not in TARGET_KINDS:
            raise InputError(f"target {target!r}: only H and U files have one, {' or '.join(TARGET_KINDS)}")
        header["target"] = target
    lines = [json.dumps(header, ensure_ascii=False)]
    for item in items:
        if item.task != task or not isinstance(item, _KIND[task]):
            raise InputError(f"item {item.id!r} is a {item.task} item; a {task} file holds {task} items only")
        lines.append(json.dumps(_row(item), ensure_ascii=False))
    path = Path(path)
    write_atomic(path, lambda tmp: tmp.write_text("\n".join(lines) + "\n", encoding="utf-8"))
    return path
