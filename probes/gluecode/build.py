"""Build glueCode task sets (NPATH, OPS, NAME, CALL) from a corpus: balanced, seeded, deterministic, with
dev/test splits by package (by file or top-level definition in a one-package corpus) and the three context levels (paper section 2.4; NULL is built from a type checker's
warnings elsewhere).

``build_items(task, corpus_spec, size=1000, seed=0)`` loads the corpus (:func:`asc.corpus.sources.load_corpus`:
stdlib, algorithms, humaneval, a folder, a .py or .jsonl file), keeps the Python functions that parse (and, with
contexts, are found at their line in their file), and turns each into at most one item per task:

* NPATH: the label is the function's bucket (:func:`~probes.gluecode.items.npath_bucket`) of its NPath
  (:func:`probes.inspect.labels.npath`; over 100: left out); nothing is masked; candidates: the 12 buckets.
* OPS: one operator site (:func:`~probes.gluecode.masks.operator_sites`) of the item's class is masked, chosen at
  random; candidates: the 12 operators; ``meta["parses"]``: the operators that keep the function parseable there.
* NAME: the function's name is masked in the three texts (:func:`~probes.gluecode.context.mask_name`: its
  definition, recursive calls, ``super().name``, callers in the file, the call graph) and, by default
  (``mask_strings``), where it stands as a whole word in strings and comments too: docstrings and doctests
  (``>>> name(2)``) name the function in 62% of algorithms' NAME items and 14% of stdlib's, which would give the
  answer away; ``meta["in_strings"]`` lists the levels where that happened. Names shorter than 4 characters and
  dunder methods are left out; candidates: the name and :data:`N_DISTRACTORS` other names of functions of the same
  split, shuffled; ``meta["recursive"]``, ``meta["callers"]`` (callers found in the package).
* CALL: one call site (:func:`~probes.gluecode.masks.call_sites`) is masked; ``meta["kind"]`` api or local, the
  class balanced on; no candidates (generated). The masked callee is left out of the call graph's callees unless
  the function calls it elsewhere too.

Balance: the classes (the 12 buckets, the 12 operators, the two call kinds; NAME has one) get ``size //
n_classes`` items each, split in halves between dev and test and balanced within each split. A function is
used once per task: classes are filled rarest first from functions ordered at random, those of at most
:data:`SHORT_CHARS` characters first (as in INSPECT; NAME: distinct names first). When a split cannot give every
class its half, every class of that split shrinks to the rarest's count (balanced) and the other split takes up
the difference as far as it can; a shortfall is logged and recorded (:func:`build_provenance`). Splits are by
package (:meth:`~probes.gluecode.context.CorpusFiles.package_name`; a snippet without a file is its own
package) through :func:`~probes.gluecode.items.split_of`, so no module (and no package a call graph reaches)
is in both splits. Where that leaves a split without an item (a folder that is one package, such as
``more_itertools/``), the functions are split by file or by top-level definition instead
(:mod:`probes.gluecode.splits`: seeded, stratified by class), whichever gives more items, then the evener split;
``report["split_by"]`` says which, and a corpus that no level splits in two raises a :class:`CorpusError` that gives
its counts and the minimum (every class in two units). At those levels the capacity search steps down one by one
(:func:`_capacity`). Only ``np.random.default_rng([seed, task number])`` draws the items (the finer split deals its
units from a stream of its own); items are shuffled at the end.

Meta of every item: ``snippet`` (the corpus id), ``package`` (the split unit, unless ``split_by`` and ``unit``
say a finer one), ``file_line`` (the function's
first line in its file, when it has one), and for masked tasks ``line``/``col`` (1-based line, character column)
of the target in the function.

Observed at ``size=1000``, seed 0 (Python 3.11; a 2-core machine under load; :func:`build_task_sets`, files
parsed once): stdlib (8,482 functions): NPATH 996 (83 a bucket: dev 42, test 41), OPS 852 (71 an operator: dev
54, test 17; ``/`` is rare in Python, 71 functions), NAME 1000, CALL 1000 (500 api, 500 local); 18 s of CPU
for the four (31 s before issue 29's speed-ups, measured side by side; the first task parses the stdlib's files). algorithms (806 functions): NPATH 180
(15 a bucket: few functions above NPath 20), OPS 348 (29 an operator, ``/`` again), NAME 736 (every eligible
name), CALL 646 (323 a kind: local calls are the rarer); 6 s for the four. more-itertools 11.2.1 at ``size=120``
(215 functions in 2 files, one package): NPATH 24 (by definition: NPath 16-20 has 2 functions), OPS 72 (by
definition; ``%`` has 7 functions), NAME 120 (by file), CALL 120 (by definition), dev and test equal in each.

Departures from the paper: Python; dev/test only (zero-shot); balanced within each split; one item per function
and task; NAME keeps no short names; call kinds by name, not by types.
"""

from __future__ import annotations

import ast
import bisect
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from asc.confined import corpus_roots
from asc.corpus.sources import Snippet, load_corpus
from asc.errors import CorpusError, InputError
from probes.gluecode.callgraph import CorpusFiles, called_names, corpus_root, module_name, parse_module
from probes.gluecode.context import FunctionContexts, build_contexts, locate_function, mask_contexts, name_visible
from probes.gluecode.items import CONTEXTS, MASK, NPATH_BUCKETS, OPERATORS, SPLITS, TASKS, Item, npath_bucket, split_of
from probes.gluecode.masks import Site, call_sites, name_ok, operator_sites, still_parses
from probes.gluecode.splits import finer_split, unit_at
from probes.inspect.labels import function_node, npath
from probes.pyast import gc_paused

__all__ = ["BUILDABLE", "BUILD_VERSION", "N_DISTRACTORS", "SHORT_CHARS", "TASK_CLASSES", "build_items",
           "build_items_from", "build_provenance", "build_task_sets", "class_of", "corpus_files"]

log = logging.getLogger(__name__)

BUILD_VERSION = 1
BUILDABLE = ("NPATH", "OPS", "NAME", "CALL")
TASK_CLASSES: dict[str, tuple[str, ...]] = {"NPATH": NPATH_BUCKETS, "OPS": OPERATORS, "NAME": ("name",),
                                            "CALL": ("api", "local")}
SHORT_CHARS = 1200  # functions up to this many characters are drawn first (as INSPECT does)
N_DISTRACTORS = 9
_Func = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class _Fn:
    """A usable corpus function: the classes it can serve and, for each, its sites (None: nothing masked)."""

    index: int
    snippet: Snippet
    func: _Func
    module: str
    unit: str
    split: str
    has_file: bool
    options: dict[str, list[Site | None]] = field(default_factory=dict)
    npath: int = 0
    split_by: str = "package"  # a level of probes.gluecode.splits.SPLIT_LEVELS
    split_unit: str = ""  # the unit at that level ('' at the package level: ``unit``)


def class_of(item: Item) -> str:
    """The class an item is balanced on: the label (NPATH, OPS), ``meta["kind"]`` (CALL), ``name`` (NAME)."""
    if item.task == "CALL":
        return str(item.meta.get("kind", ""))
    if item.task == "NAME":
        return "name"
    return item.label


def _check_task(task: str, size: int) -> tuple[str, ...]:
    if task not in BUILDABLE:
        extra = " (NULL items come from a type checker's warnings, not from this builder)" if task == "NULL" else ""
        raise InputError(f"task {task!r} cannot be built here{extra}: choose one of {', '.join(BUILDABLE)}")
    classes = TASK_CLASSES[task]
    if size < 2 * len(classes):
        raise InputError(f"task {task}: size {size} is too small for {len(classes)} classes in two splits; "
                         f"use size >= {2 * len(classes)}")
    return classes


def build_items(task: str, corpus_spec: str, size: int = 1000, seed: int = 0, contexts: bool = True, *,
                roots: Sequence[Path] | None = None, report: dict | None = None,
                mask_strings: bool = True) -> list[Item]:
    """``size`` items (or fewer, balanced, see the module docstring) of ``task`` from the corpus ``corpus_spec``.
    ``contexts``: build the file and call-graph texts; ``roots``: the folders a folder corpus must lie in;
    ``report``: a dict filled with the build's details (availability, skips, warnings, seconds) for
    :func:`build_provenance`; ``mask_strings``: NAME also hides the name in strings and comments."""
    _check_task(task, size)
    snippets = load_corpus(corpus_spec, roots=roots)
    return build_items_from(task, snippets, corpus_files(corpus_spec, roots), size=size, seed=seed, contexts=contexts,
                            report=report, mask_strings=mask_strings)


def corpus_files(corpus_spec: str, roots: Sequence[Path] | None = None) -> CorpusFiles | None:
    """The reader of a corpus's origin files (None for ``humaneval`` and ``.jsonl``), to share between tasks;
    ``roots`` confines what it reads, as it confined the corpus (a built-in corpus to its own folder:
    :func:`asc.confined.corpus_roots`)."""
    root = corpus_root(corpus_spec)
    return CorpusFiles(root, corpus_roots(corpus_spec, roots)) if root is not None else None


def build_task_sets(tasks: Sequence[str], corpus_spec: str, size: int = 1000, seed: int = 0, contexts: bool = True,
                    *, roots: Sequence[Path] | None = None,
                    mask_strings: bool = True) -> dict[str, tuple[list[Item], dict]]:
    """Several tasks from one corpus, loaded and parsed once: ``{task: (items, provenance)}``."""
    for task in tasks:
        _check_task(task, size)
    snippets = load_corpus(corpus_spec, roots=roots)
    files = corpus_files(corpus_spec, roots)
    parsed: dict[int, Any] = {}  # each snippet's function node, parsed once for all the tasks
    out = {}
    with gc_paused():  # the trees stay alive between the tasks (probes.pyast)
        for task in tasks:
            report: dict = {}
            items = build_items_from(task, snippets, files, size=size, seed=seed, contexts=contexts, report=report,
                                     mask_strings=mask_strings, parsed=parsed)
            out[task] = (items, build_provenance(task, corpus_spec, items, size=size, seed=seed, contexts=contexts,
                                                 report=report))
    return out


def _function(task: str, i: int, snip: Snippet, files: CorpusFiles | None, contexts: bool,
              skipped: Counter[str], parsed: dict[int, Any]) -> _Fn | None:
    if snip.language != "python":
        skipped["not Python"] += 1
        return None
    func = parsed[i] if i in parsed else parsed.setdefault(i, function_node(snip.source))  # read-only below
    if func is None or MASK in snip.source:
        skipped["does not parse as a function" if func is None else f"holds {MASK}"] += 1
        return None
    has_file = files is not None and files.root is not None and snip.origin.endswith(".py")
    info = None
    if files is not None and has_file:
        if contexts or task == "CALL":
            info = files.module(snip.origin)
            if info is None:
                skipped["its file cannot be read or parsed"] += 1
                return None
        if contexts and info is not None and locate_function(snip.source, info.text, snip.line, info.lines()) is None:
            skipped["not found at its line in its file"] += 1
            return None
        module, unit = files.prefix + module_name(snip.origin), files.package_name(snip.origin)
    else:
        module = unit = snip.id
    fn = _Fn(i, snip, func, module, unit, split_of(unit), has_file)
    if task == "NPATH":
        fn.npath = npath(func)
        bucket = npath_bucket(fn.npath)
        if bucket is not None:
            fn.options[bucket] = [None]
    elif task == "NAME":
        if name_ok(func.name):
            fn.options["name"] = [None]
    else:
        if task == "OPS":
            sites = operator_sites(snip.source, func)
        else:
            module_info = info or parse_module(snip.source, "", module, None)
            index = files.index(snip.origin) if files is not None and has_file else None
            sites = call_sites(snip.source, module_info, index, func)
        for s in sites:
            fn.options.setdefault(s.kind or s.label, []).append(s)
    if not fn.options:
        skipped[f"no {task} target"] += 1
        return None
    return fn


def _order(fns: list[_Fn], rng: np.random.Generator, task: str) -> list[_Fn]:
    """Random order, functions of at most SHORT_CHARS characters first; NAME: each name's first function first."""
    shuffled = [fns[j] for j in rng.permutation(len(fns))]
    order = [f for f in shuffled if len(f.snippet.source) <= SHORT_CHARS]
    order += [f for f in shuffled if len(f.snippet.source) > SHORT_CHARS]
    if task == "NAME":
        seen: set[str] = set()
        first = [f for f in order if f.func.name not in seen and not seen.add(f.func.name)]  # type: ignore[func-returns-value]
        taken = {id(f) for f in first}
        order = first + [f for f in order if id(f) not in taken]
    return order


def _assign(order: list[_Fn], classes: Sequence[str], k: int) -> dict[str, list[_Fn]]:
    """Up to ``k`` functions per class, each function once, rarest class first, in ``order``."""
    pools = {c: [f for f in order if c in f.options] for c in classes}
    used: set[int] = set()
    out: dict[str, list[_Fn]] = {}
    for c in sorted(classes, key=lambda c: (len(pools[c]), classes.index(c))):
        picked: list[_Fn] = []
        for f in pools[c]:
            if len(picked) == k:
                break
            if f.index not in used:
                picked.append(f)
                used.add(f.index)
        out[c] = picked
    return out


def _capacity(order: list[_Fn], classes: Sequence[str], want: int, one_by_one: bool = False) -> int:
    """The largest per-class count up to ``want`` that every class reaches (greedy, see _assign). A count the
    classes miss is followed by what the rarest got (the package split's search, kept as it was) or, ``one_by_one``,
    by the count one lower: functions holding several rare classes make a lower count fit better (more-itertools'
    OPS by definition: 3 per class where the jump from 10 lands on 1)."""
    k = want
    while k > 0:
        got = min(len(v) for v in _assign(order, classes, k).values())
        if got >= k:
            return k
        k = k - 1 if one_by_one else got
    return 0


def _per_split(orders: dict[str, list[_Fn]], classes: Sequence[str], want: int,
               one_by_one: bool = False) -> dict[str, int]:
    """Items per class in each split: dev as many as it can give up to ``want`` less test's half (or less), test the
    rest it can give (see the module docstring; ``one_by_one``: see :func:`_capacity`)."""
    caps = {s: _capacity(orders[s], classes, want, one_by_one) for s in SPLITS}
    k_dev = min(caps["dev"], want - min(caps["test"], want // 2))
    return {"dev": k_dev, "test": min(caps["test"], want - k_dev)}


def _finer_split(task: str, fns: list[_Fn], files: CorpusFiles | None, classes: Sequence[str], want: int, seed: int,
                 rng: np.random.Generator) -> tuple[str, dict[str, list[_Fn]], dict[str, int]]:
    """The functions split by file or by top-level definition (:func:`probes.gluecode.splits.finer_split`), whichever
    gives more items per class (then the larger smaller split; then by file); sets every function's split and unit."""
    def score(splits: list[str]) -> tuple[int, int]:  # capacities in corpus order (the final order is drawn below)
        per = _per_split({s: [f for f, sp in zip(fns, splits) if sp == s] for s in SPLITS}, classes, want, True)
        return per["dev"] + per["test"], min(per.values())

    level, units, splits = finer_split(task, seed, len(fns), lambda level, i: _unit(fns[i], level, files),
                                       [f.options.keys() for f in fns], classes, score)
    for f, unit, split in zip(fns, units, splits):
        f.split_by, f.split_unit, f.split = level, unit, split
    orders = {s: _order([f for f in fns if f.split == s], rng, task) for s in SPLITS}
    return level, orders, _per_split(orders, classes, want, one_by_one=True)


def _unit(fn: _Fn, level: str, files: CorpusFiles | None) -> str:
    snip = fn.snippet
    return unit_at(level, files, fn.unit, snip.origin, snip.line, snip.name) if fn.has_file else snip.id


def _too_small(task: str, fns: list[_Fn], classes: Sequence[str]) -> CorpusError:
    """The error of a corpus that cannot give every class to both splits, with its counts and the minimum."""
    holders = {c: {f.split_unit for f in fns if c in f.options} for c in classes}
    rare = min(classes, key=lambda c: (len(holders[c]), classes.index(c)))
    n_files = len({f.snippet.origin if f.has_file else f.snippet.id for f in fns})
    level = fns[0].split_by if fns else "definition"
    return CorpusError(
        f"task {task}: the corpus is too small for a dev and a test split: {len(fns)} functions with a {task} target "
        f"in {n_files} files; each of the {len(classes)} classes needs functions in at least 2 units (split by "
        f"{level}), and {rare!r} has {sum(rare in f.options for f in fns)} functions in {len(holders[rare])}; give "
        "a bigger folder (or, for NPATH and OPS, one whose functions cover every class twice)")


def _make_item(task: str, fn: _Fn, cls: str, site: Site | None, files: CorpusFiles | None, contexts: bool,
               candidates: tuple[str, ...], mask_strings: bool) -> Item:
    snip, source = fn.snippet, fn.snippet.source
    ctx = FunctionContexts(source, "", "")
    meta: dict[str, Any] = {"snippet": snip.id, "package": fn.unit}
    if fn.split_by != "package":
        meta.update(split_by=fn.split_by, unit=fn.split_unit)
    if contexts:
        exclude: tuple[str, ...] = ()
        if task == "CALL" and site is not None:
            calls = [n for n in ast.walk(fn.func) if isinstance(n, ast.Call)]
            same = [c for c in calls if getattr(c.func, "id", getattr(c.func, "attr", None)) == site.label]
            exclude = (site.label,) if len(same) < 2 else ()
        built = build_contexts(source, snip.origin if fn.has_file else "", snip.line,
                               files if fn.has_file else None, exclude_callees=exclude, for_names=task == "NAME")
        if built is None:
            raise CorpusError(f"{snip.id}: its file changed or does not parse; build again")
        ctx = built
        if fn.has_file:
            meta["file_line"] = snip.line
    label = cls
    if task == "NPATH":
        meta["npath"] = fn.npath
    elif task == "NAME":
        label = fn.func.name
        tokens_only = mask_contexts(ctx, name=label)
        meta["in_strings"] = [lvl for lvl in CONTEXTS if (text := getattr(tokens_only, lvl)) and name_visible(text, label)]
        ctx = mask_contexts(ctx, name=label, strings=True) if mask_strings else tokens_only
        meta["strings_masked"] = mask_strings
        meta["recursive"] = label in called_names(fn.func)
        if fn.has_file and files is not None:
            meta["callers"] = sum(d.kind == "function" and label in d.calls and not (d.path == snip.origin
                                                                                    and d.line == snip.line)
                                  for d in files.index(snip.origin).definitions())
    else:
        assert site is not None
        label = site.label
        ctx = mask_contexts(ctx, span=(site.start, site.end))
        meta.update(line=site.row, col=site.col)
        if task == "OPS":
            meta["parses"] = still_parses(source, site.start, site.end)
        else:
            meta.update(kind=site.kind, where=site.where)
    return Item(task, f"{task}/{snip.id}", fn.split, fn.module, ctx.function, label, candidates, ctx.file,
                ctx.callgraph, meta)


def build_items_from(task: str, snippets: Sequence[Snippet], files: CorpusFiles | None, *, size: int = 1000,
                     seed: int = 0, contexts: bool = True, report: dict | None = None,
                     mask_strings: bool = True, parsed: dict[int, Any] | None = None) -> list[Item]:
    """:func:`build_items` over given snippets; ``files`` (:func:`corpus_files`, may be shared by several builds)
    reads their origin files (None: no files, the file context is the function itself). ``parsed`` (snippet index
    -> function node) may be shared by builds over the same ``snippets``: each is then parsed once."""
    with gc_paused():  # the corpus's trees (and its files') are alive throughout (probes.pyast)
        return _build_items(task, snippets, files, size, seed, contexts, report, mask_strings,
                            {} if parsed is None else parsed)


def _build_items(task: str, snippets: Sequence[Snippet], files: CorpusFiles | None, size: int, seed: int,
                 contexts: bool, report: dict | None, mask_strings: bool, parsed: dict[int, Any]) -> list[Item]:
    start = time.perf_counter()
    classes = _check_task(task, size)
    want = size // len(classes)
    rng = np.random.default_rng([seed, TASKS.index(task)])
    skipped: Counter[str] = Counter()
    fns = [fn for i, s in enumerate(snippets)
           if (fn := _function(task, i, s, files, contexts, skipped, parsed)) is not None]
    orders = {s: _order([f for f in fns if f.split == s], rng, task) for s in SPLITS}
    per_split = _per_split(orders, classes, want)
    split_by = "package"
    if fns and not (per_split["dev"] and per_split["test"]):  # one package (or too few): split finer
        split_by, orders, per_split = _finer_split(task, fns, files, classes, want, seed, rng)
    available = {s: {c: sum(c in f.options for f in orders[s]) for c in classes} for s in SPLITS}
    warnings = []
    if per_split["dev"] + per_split["test"] < want:
        rare = {s: min(classes, key=lambda c: available[s][c]) for s in SPLITS}
        warnings.append(f"task {task}: the corpus gives {per_split['dev'] + per_split['test']} items per class "
                        f"(dev {per_split['dev']}, test {per_split['test']}) instead of {want}; rarest class: "
                        + ", ".join(f"{rare[s]!r} in {s} ({available[s][rare[s]]} functions)" for s in SPLITS)
                        + "; use a bigger corpus such as 'stdlib' for a full set")
        log.warning(warnings[-1])
    if not per_split["dev"] + per_split["test"]:
        raise CorpusError(f"task {task}: the corpus gives no balanced item ({warnings[-1]})")
    if not (per_split["dev"] and per_split["test"]):
        raise _too_small(task, fns, classes)
    name_pool = {s: sorted({f.func.name for f in orders[s]}) for s in SPLITS} if task == "NAME" else {}
    items: list[Item] = []
    for split in SPLITS:
        chosen = _assign(orders[split], classes, per_split[split])
        per_split[split] = min(len(v) for v in chosen.values())  # the capacity's count: every class reaches it
        for cls in classes:
            for fn in chosen[cls][:per_split[split]]:
                sites = fn.options[cls]
                site = sites[int(rng.integers(len(sites)))]
                candidates: tuple[str, ...] = () if task == "CALL" else classes
                if task == "NAME":
                    others = _without(name_pool[split], fn.func.name)
                    picked = [others[j] for j in rng.permutation(len(others))[:N_DISTRACTORS]]
                    candidates = tuple((picked + [fn.func.name])[j] for j in rng.permutation(len(picked) + 1))
                items.append(_make_item(task, fn, cls, site, files, contexts, candidates, mask_strings))
    items = [items[j] for j in rng.permutation(len(items))]
    if report is not None:
        report.update(n_snippets=len(snippets), n_usable=len(fns), skipped=dict(sorted(skipped.items())),
                      available=available, per_class_per_split=per_split, split_by=split_by, warnings=warnings,
                      seconds=round(time.perf_counter() - start, 3))
    return items


def _without(names: list[str], name: str) -> list[str]:
    """The sorted, distinct ``names`` but ``name`` (found by bisection: one NAME item after another asks)."""
    j = bisect.bisect_left(names, name)
    return names[:j] + names[j + 1:] if j < len(names) and names[j] == name else list(names)


def build_provenance(task: str, corpus_spec: str, items: Sequence[Item], *, size: int, seed: int,
                     contexts: bool = True, report: dict | None = None) -> dict:
    """The header provenance of a task file: corpus, seed, size asked and built, counts per class and split,
    and the build ``report`` of :func:`build_items` when given."""
    classes = TASK_CLASSES.get(task, ())
    per_class_split = {c: {s: 0 for s in SPLITS} for c in classes}
    for it in items:
        per_class_split.setdefault(class_of(it), {s: 0 for s in SPLITS})[it.split] += 1
    full = (size // len(classes)) * len(classes) if classes else size
    prov: dict[str, Any] = {
        "builder": "probes.gluecode.build", "builder_version": BUILD_VERSION, "corpus": corpus_spec, "task": task,
        "seed": seed, "size": size, "contexts": contexts, "n_items": len(items), "complete": len(items) >= full,
        "per_class": {c: sum(v.values()) for c, v in per_class_split.items()},
        "per_split": {s: sum(it.split == s for it in items) for s in SPLITS},
        "per_class_split": per_class_split,
    }
    if task == "NAME":
        prov["name_masking"] = ("identifiers, strings and comments" if items and items[0].meta.get("strings_masked")
                                else "identifiers")
    if report:
        prov["build"] = dict(report)
    return prov
