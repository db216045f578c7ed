"""glueCode task items for Python and their file format (one JSONL file per task set).

An :class:`Item` is one question of one of the five glueCode tasks (paper section 2.4), built from a
corpus function: the function's source with the target masked (:data:`MASK`), the answer, the candidate
answers for the ranked tasks, and the two larger contexts of the paper's local-to-global axis (the whole
file with the target masked everywhere; the file plus signatures and docstrings of what the function calls
and what calls it). :meth:`Item.context` gives the text for a context level.

File format (``*.jsonl``, UTF-8): the first line is a header object
``{"format": "asc-gluecode", "version": 1, "task": "OPS", "provenance": {...}}`` (provenance: corpus,
seed, size, the code's version; free-form), then one JSON object per item with the fields of :class:`Item`
(``candidates`` a list, ``meta`` an object; ``file``/``callgraph``/``candidates``/``meta`` optional).
:func:`load_items` validates every line and raises a :class:`~asc.errors.InputError` naming the file, the
line and the fix, as the INSPECT TSV loader does; :func:`save_items` writes atomically.

Departures from the paper: Python instead of Java; splits are dev/test only (the models are evaluated
zero-shot, nothing is trained on a train split), by module so that no function is in two splits. The layer
probes of :mod:`probes.gluecode.probing` train, and cut tr/va/te by package instead (:func:`probe_splits`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from asc.atomic import write_atomic
from asc.confined import MAX_READ_BYTES, read_user_lines
from asc.errors import InputError

__all__ = ["CONTEXTS", "FORMAT", "MASK", "NO_WARNING", "NPATH_BUCKETS", "OPERATORS", "SPLITS", "TASKS", "TASK_SUMMARY", "Item",
           "by_split", "load_items", "npath_bucket", "probe_splits", "save_items", "split_of"]

FORMAT = "asc-gluecode"
VERSION = 1
TASKS = ("NPATH", "OPS", "NAME", "CALL", "NULL")
CONTEXTS = ("function", "file", "callgraph")
SPLITS = ("dev", "test")
MASK = "<MASK>"  # the masked spot in every text of an item (a string no Python source contains on its own)
NO_WARNING = "<no warning>"  # NullToken's answer for the 20% of items without a checker warning
OPERATORS = ("+", "-", "*", "/", "%", "=", "==", "!=", "<", ">", "<=", ">=")  # the paper's 12 classes
NPATH_BUCKETS = ("1", "2", "3", "4", "5-6", "7-8", "9-10", "11-15", "16-20", "21-30", "31-50", "51-100")  # B.1
_BUCKET_BOUNDS = (1, 2, 3, 4, 6, 8, 10, 15, 20, 30, 50, 100)
TASK_SUMMARY = {"NPATH": "NPath complexity bucket (12 classes)", "OPS": "masked operator (12 classes)",
             "NAME": "masked function name (char-BLEU)", "CALL": "masked call (exact match)",
             "NULL": "token mypy flags as possibly None, or no warning"}  # one line per task, for menus


def npath_bucket(value: int) -> str | None:
    """The paper's bucket (appendix B.1) of an NPath value; None above 100 (the paper keeps none)."""
    for name, upper in zip(NPATH_BUCKETS, _BUCKET_BOUNDS):
        if value <= upper:
            return name
    return None


def _unit_hash(unit: str) -> float:
    """A stable number in [0, 1] for a split unit (a module or package name): SHA-256, first 32 bits."""
    import hashlib

    return int(hashlib.sha256(unit.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF


def split_of(module: str, dev_share: float = 0.5) -> str:
    """``dev`` or ``test`` for a module, from a stable hash of its name (no function in two splits)."""
    return "dev" if _unit_hash(module) < dev_share else "test"


def probe_splits(units: Sequence[str], shares: tuple[float, float] = (0.6, 0.2)) -> list[str]:
    """``tr``, ``va`` or ``te`` for each sample of a layer probe (:mod:`probes.gluecode.probing`), given its split
    unit (a package): whole units, taken in the order of :func:`split_of`'s stable hash, fill ``tr`` up to 60% of the
    samples, then ``va`` up to 80%, then ``te`` (a unit goes where the middle of its samples falls, so a large unit
    may overshoot). No unit is in two splits, and the samples come close to 60/20/20 however unequal the units are
    (a cut of the hash itself would split the units 60/20/20, not the samples). glueCode's dev units come first."""
    counts: dict[str, int] = {}
    for unit in units:
        counts[unit] = counts.get(unit, 0) + 1
    n, done, split_of_unit = max(len(units), 1), 0, {}
    for unit in sorted(counts, key=lambda u: (_unit_hash(u), u)):
        middle = (done + counts[unit] / 2) / n
        split_of_unit[unit] = "tr" if middle < shares[0] else "va" if middle < shares[0] + shares[1] else "te"
        done += counts[unit]
    return [split_of_unit[unit] for unit in units]


@dataclass(frozen=True)
class Item:
    """One glueCode question. ``function``/``file``/``callgraph`` hold :data:`MASK` where the target was
    (NPATH masks nothing); ``label`` is the answer; ``candidates`` the answers a model ranks (the classes for
    NPATH and OPS, candidate names for NAME, the function's tokens plus :data:`NO_WARNING` for NULL; empty
    for CALL, which is generated); ``meta`` task details (e.g. ``npath``, ``kind`` api/local for CALL, the
    checker's ``message`` for NULL, ``line``/``col`` of the target in the function)."""

    task: str
    id: str
    split: str
    module: str
    function: str
    label: str
    candidates: tuple[str, ...] = ()
    file: str = ""
    callgraph: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def context(self, level: str) -> str:
        """The text a model sees at ``level``: the function; the whole file; the call graph's signatures and
        docstrings followed by the file. A level whose text was not built falls back to the next smaller."""
        if level not in CONTEXTS:
            raise InputError(f"context {level!r}: choose one of {', '.join(CONTEXTS)}")
        if level == "callgraph" and self.callgraph:
            return f"{self.callgraph}\n\n{self.file or self.function}"
        if level in ("file", "callgraph") and self.file:
            return self.file
        return self.function


def _check(item: dict, where: str) -> Item:
    required = ("task", "id", "split", "module", "function", "label")
    missing = [k for k in required if not isinstance(item.get(k), str)]
    if missing:
        raise InputError(f"{where}: missing or not text: {', '.join(missing)}; every item needs {', '.join(required)}")
    if item["task"] not in TASKS:
        raise InputError(f"{where}: task {item['task']!r} is not one of {', '.join(TASKS)}")
    if item["split"] not in SPLITS:
        raise InputError(f"{where}: split {item['split']!r} is not one of {', '.join(SPLITS)}")
    unknown = set(item) - {f for f in Item.__dataclass_fields__}
    if unknown:
        raise InputError(f"{where}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))}")
    candidates = item.get("candidates", [])
    if not isinstance(candidates, list) or not all(isinstance(c, str) for c in candidates):
        raise InputError(f"{where}: candidates must be a list of strings")
    if candidates and item["label"] not in candidates:
        raise InputError(f"{where}: the label {item['label']!r} is not among the candidates; add it")
    if MASK not in item["function"] and item["task"] != "NPATH":
        raise InputError(f"{where}: the function has no {MASK}: mask the target where it stands")
    if not isinstance(item.get("meta", {}), dict):
        raise InputError(f"{where}: meta must be an object")
    for key in ("file", "callgraph"):
        if not isinstance(item.get(key, ""), str):
            raise InputError(f"{where}: {key} must be text")
    return Item(**{**item, "candidates": tuple(candidates)})


def load_items(path: str | Path) -> tuple[dict, list[Item]]:
    """The header and the items of a task file; any problem is an :class:`InputError` naming the line."""
    path = Path(path)
    lines = read_user_lines(path, MAX_READ_BYTES, "task file", fix="give a glueCode task file (JSON lines)",
                          missing=f"{path}: no such task file; build one with `python -m probes gluecode build`")
    rows = []
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"{path}, line {n}: not JSON ({err.msg}); one JSON object per line") from None
        if not isinstance(row, dict):
            raise InputError(f"{path}, line {n}: a JSON object is expected")
        rows.append(row)
    header = rows[0]
    if header.get("format") != FORMAT or header.get("version") != VERSION or header.get("task") not in TASKS:
        raise InputError(f"{path}, line 1: not a glueCode task file header (expected {{\"format\": \"{FORMAT}\", "
                         f"\"version\": {VERSION}, \"task\": one of {', '.join(TASKS)}}})")
    items = [_check(row, f"{path}, line {n}") for n, row in enumerate(rows[1:], 2)]
    wrong = next((n for n, it in enumerate(items, 2) if it.task != header["task"]), None)
    if wrong is not None:
        raise InputError(f"{path}, line {wrong}: task {items[wrong - 2].task} in a {header['task']} file")
    seen: set[str] = set()
    for n, it in enumerate(items, 2):
        if it.id in seen:
            raise InputError(f"{path}, line {n}: id {it.id!r} is used twice; ids must be unique")
        seen.add(it.id)
    return header, items


def save_items(path: str | Path, task: str, items: Iterable[Item], provenance: dict | None = None) -> Path:
    """Write a task file atomically (header then items); returns the path."""
    if task not in TASKS:
        raise InputError(f"task {task!r}: choose one of {', '.join(TASKS)}")
    header = {"format": FORMAT, "version": VERSION, "task": task, "provenance": provenance or {}}
    lines = [json.dumps(header)] + [json.dumps(_row(it), ensure_ascii=False) for it in items]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda tmp: tmp.write_text("\n".join(lines) + "\n", encoding="utf-8"))
    return path


def _row(item: Item) -> dict:
    row = asdict(item)
    row["candidates"] = list(item.candidates)
    return {k: v for k, v in row.items() if v not in ("", [], {}) or k in ("function", "label")}


def by_split(items: Sequence[Item], split: str) -> list[Item]:
    """The items of one split."""
    return [it for it in items if it.split == split]
