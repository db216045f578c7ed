"""The split units of glueCode items: by package, and by file or top-level definition where a corpus is one package.

The paper splits its Java projects at the project level. :mod:`probes.gluecode.build` and
:mod:`probes.gluecode.nulltoken` split by *package* first (:func:`~probes.gluecode.items.split_of`, a stable hash
of the package's name: the stdlib's sets are cut there, unchanged). A researcher's own folder is one package,
though (``--corpus`` pointing at ``more_itertools/``), so every item would land in one split and the baselines,
fitted on dev and scored on test, would have nothing to fit. When the package split leaves a split without an
item, the items are split instead by one of the finer :data:`FINER_LEVELS`:

* ``file``: the function's file (a module);
* ``definition``: the function's top-level definition in its file (a function, or a class with all its methods:
  :func:`definition_of`), for packages of few files: more-itertools keeps its 215 functions in two files, and the
  functions of NPath 16-20 all in one of them, so no split by file gives that bucket to both splits.

At a finer level the units are dealt to the splits by :func:`assign_units`: seeded
(:func:`level_rng`: ``np.random.default_rng([seed, task number, level number])``) and stratified, so that every class gets functions
in both splits when at least two units hold it. The builder tries both levels and keeps the one that gives more
items (then the larger smaller split; then the coarser, ``file``): see
:func:`probes.gluecode.build.build_items_from`. Items split that way carry ``meta["split_by"]`` (the level) and
``meta["unit"]``; the task file's provenance records ``split_by`` and :func:`split_summary` prints it with the
sizes. Units at these levels share their package's call graph and their file's text: a test item's file context
may show a dev function (nothing is trained on dev, which only fits the trivial baselines, so nothing leaks into a
model; the function itself is never in both splits).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Collection, Sequence

import numpy as np

from probes.gluecode.callgraph import CorpusFiles
from probes.gluecode.items import SPLITS, TASKS, Item

__all__ = ["FINER_LEVELS", "SPLIT_LEVELS", "assign_units", "definition_of", "finer_split", "level_rng", "split_summary", "unit_at"]

SPLIT_LEVELS = ("package", "file", "definition")
FINER_LEVELS = SPLIT_LEVELS[1:]


def definition_of(files: CorpusFiles | None, origin: str, line: int, name: str) -> str:
    """``<file>::<top-level name>`` of the top-level function or class of file ``origin`` that holds ``line`` (a
    method's class; one under a top-level ``if``, ``try`` or ``with`` counts as top-level); ``<file>::<name>`` when
    the file cannot be parsed or nothing there holds the line."""
    info = files.module(origin) if files is not None and files.root is not None else None
    body = list(info.tree.body) if info is not None else []
    while body:
        node = body.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if first <= line <= (node.end_lineno or node.lineno):
                return f"{origin}::{node.name}"
        elif isinstance(node, ast.If | ast.Try | ast.With):
            handlers = [h for h in getattr(node, "handlers", ()) if isinstance(h, ast.ExceptHandler)]
            body += [*node.body, *getattr(node, "orelse", ()), *(s for h in handlers for s in h.body),
                     *getattr(node, "finalbody", ())]
    return f"{origin}::{name}"


def unit_at(level: str, files: CorpusFiles | None, package: str, origin: str, line: int, name: str) -> str:
    """The split unit at ``level`` (see :data:`SPLIT_LEVELS`) of the function ``name`` at ``line`` of file
    ``origin`` (relative to ``files.root``) in ``package``."""
    if level == "package":
        return package
    return origin if level == "file" else definition_of(files, origin, line, name)


def level_rng(seed: int, task: str, level: str) -> np.random.Generator:
    """The generator that deals the units of ``task`` at ``level`` (its own stream: the item draws are untouched)."""
    return np.random.default_rng([seed, TASKS.index(task), SPLIT_LEVELS.index(level)])


def assign_units(units: Sequence[str], classes_of: Sequence[Collection[str]], classes: Sequence[str],
                 rng: np.random.Generator) -> dict[str, str]:
    """``{unit: "dev" or "test"}`` for the units of some functions (``units[i]`` and ``classes_of[i]``: the unit
    and the classes of function ``i``), stratified: classes are taken rarest first (fewest units holding them,
    then fewest functions, then their order in ``classes``), and the units holding a class that are not dealt yet
    go, in a seeded order, each to the split with fewer functions of that class (ties: fewer functions in all,
    then dev). A class held by two units or more thus gets functions in both splits. Units holding no class go by
    the same rule after them."""
    per_unit: dict[str, Counter[str]] = {}
    size: Counter[str] = Counter()
    for unit, held in zip(units, classes_of):
        per_unit.setdefault(unit, Counter()).update(c for c in held if c in classes)
        size[unit] += 1
    holders = {c: sorted(u for u, held in per_unit.items() if held[c]) for c in classes}
    order = sorted(classes, key=lambda c: (len(holders[c]), sum(per_unit[u][c] for u in holders[c]),
                                           classes.index(c)))
    counts = {s: Counter[str]() for s in SPLITS}
    total = Counter[str]()
    out: dict[str, str] = {}
    groups = [holders[c] for c in order] + [sorted(per_unit)]
    keys = [*order, None]
    for key, group in zip(keys, groups):
        for j in rng.permutation(len(group)):
            unit = group[j]
            if unit in out:
                continue
            split = min(SPLITS, key=lambda s: (counts[s][key] if key else 0, total[s], SPLITS.index(s)))
            out[unit] = split
            counts[split].update(per_unit[unit])
            total[split] += size[unit]
    return out


def finer_split(task: str, seed: int, n: int, unit_of: Callable[[str, int], str], classes_of: Sequence[Collection[str]],
                classes: Sequence[str], score: Callable[[list[str]], tuple[int, ...]]) -> tuple[str, list[str], list[str]]:
    """The finer split of ``n`` functions: at each of :data:`FINER_LEVELS` their units (``unit_of(level, i)``) are
    dealt by :func:`assign_units` (``classes_of[i]``: function ``i``'s classes); returns the level whose
    ``score(splits)`` (``splits[i]``: function ``i``'s split) is highest (ties: the coarser), the functions' units
    and their splits."""
    best: tuple[tuple[int, ...], str, list[str], list[str]] | None = None
    for rank, level in enumerate(FINER_LEVELS):
        units = [unit_of(level, i) for i in range(n)]
        assigned = assign_units(units, classes_of, classes, level_rng(seed, task, level))
        splits = [assigned[u] for u in units]
        key = (*score(splits), -rank)
        if best is None or key > best[0]:
            best = (key, level, units, splits)
    assert best is not None
    return best[1], best[2], best[3]


def split_summary(items: Sequence[Item]) -> str:
    """``dev N, test M, split by <level>`` for one task's items, as the command line prints it."""
    n = Counter(it.split for it in items)
    levels = sorted({str(it.meta.get("split_by", "package")) for it in items}) or ["package"]
    return f"dev {n['dev']}, test {n['test']}, split by {' and '.join(levels)}"
