"""glueCode's NPATH and NULL tasks as INSPECT-style layer probes (:func:`probes.inspect.runs.run_layers`).

The zero-shot glueCode items (:mod:`probes.gluecode.build`, :mod:`probes.gluecode.nulltoken`) ask a model for an
answer; a layer probe instead trains a linear classifier per layer on the model's summary vector of each function.
:func:`probe_task` turns a corpus into a :class:`~probes.inspect.taskfile.Task` (texts, labels, ``tr``/``va``/``te``
splits) that the INSPECT pipeline takes as it is: features cached, L2 chosen on ``va``, control task.

* ``NPATH``: the texts are the functions' sources (nothing masked), the labels the paper's 12 buckets
  (:data:`~probes.gluecode.items.NPATH_BUCKETS`), balanced, drawn by :func:`probes.gluecode.build.build_items_from`
  (``contexts=False``, the same items as the zero-shot task for the same corpus, size and seed). INSPECT's own
  NPath task is ``NPT`` (10 bins); this one keeps glueCode's buckets.
* ``NULL``: a binary, sequence-level probe, labels ``no warning`` / ``warns``: does mypy flag a possible None
  dereference anywhere in the function (:func:`probes.gluecode.nulltoken.classify_functions`). Positives hold at
  least one kept warning site (any number, unlike the zero-shot items, which need exactly one), negatives are the
  zero-shot negatives (no kept warning and no other diagnostic naming None). Equal counts, ``min(positives,
  negatives, size // 2)`` each, drawn in a seeded order. The labels mean "the type checker (mypy) warns here", not
  proven bugs (see :mod:`probes.gluecode.nullcheck`); ``meta["chars_median"]`` shows how much longer the
  positives are (a longer function has more chances to be flagged, which a probe can pick up).

**Splits** are by package (the split unit of :meth:`~probes.gluecode.context.CorpusFiles.package_name`; a
snippet without a file is its own unit), so no module is in two splits: whole packages, in a stable hash order,
fill about 60/20/20 of the samples (:func:`~probes.gluecode.items.probe_splits`; a large package may overshoot).
Classes are balanced over the task, not within each split: a split that lacks a class is warned in
``meta["warnings"]``; a split without any sample is a :class:`~asc.errors.CorpusError`. ``meta`` matches
INSPECT's (:func:`probes.inspect.tasks.build_task`): task, description, corpus, size_requested, seed, counts per
class and split, snippet ids, build seconds; NULL adds the checker, its version and flags, and the labels' caveat.

Observed on the stdlib at ``size=1000``, seed 0 (Python 3.11, mypy cached): NPATH 996 samples (83 a bucket),
tr/va/te 600/198/198 from 91/27/37 packages, 3 s; NULL 566 (283 flagged functions, all of them, and 283 of 8,003
clean ones), 330/125/111, median length 587 characters flagged against 403 clean, 1.4 s (mypy's first run: 10-20 s).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.errors import CorpusError, InputError
from probes.gluecode.items import NPATH_BUCKETS, TASKS, probe_splits
from probes.inspect.taskfile import TASK_SPLITS, Task

if TYPE_CHECKING:
    from asc.corpus.sources import Snippet

__all__ = ["NULL_LABELS", "NULL_MEANING", "PROBE_INFO", "PROBE_TASKS", "probe_task"]

log = logging.getLogger(__name__)

PROBE_TASKS = ("NPATH", "NULL")
NULL_LABELS = ("no warning", "warns")
NULL_MEANING = "warns: the type checker (mypy) warns here (a possible None dereference), not a proven bug"
PROBE_INFO = {
    "NPATH": "glueCode's NPath task: NPath complexity in the paper's 12 buckets 1, 2, 3, 4, 5-6, 7-8, 9-10, 11-15, "
             "16-20, 21-30, 31-50, 51-100 (12 classes; split by package)",
    "NULL": "glueCode's NullToken as a probe: does the type checker (mypy) warn of a possible None dereference "
            "anywhere in the function; 'warns' means mypy warns here, not a proven bug (binary; split by package)",
}

_Row = tuple[str, int, str, str]  # text, class index, snippet id, split unit


def probe_task(name: str, corpus: str, size: int = 1000, seed: int = 0, roots: Sequence[Path] | None = None, *,
               snippets: Sequence[Snippet] | None = None, workdir: str | Path | None = None,
               parsed: dict[int, Any] | None = None) -> Task:
    """glueCode task ``name`` (``NPATH`` or ``NULL``) from ``corpus`` as a layer-probe :class:`Task` (see the module
    doc). ``roots`` confines a corpus path; ``snippets``: the corpus loaded already (``load_corpus(corpus,
    roots=roots)``, shared with INSPECT's tasks); ``workdir``: where mypy's output is cached (NULL; default the
    app's cache folder); ``parsed``: the snippets' function nodes by index, shared with INSPECT's builds
    (:func:`probes.inspect.tasks.build_task`; NPATH)."""
    from asc.corpus.sources import load_corpus

    if name not in PROBE_TASKS:
        raise InputError(f"unknown glueCode probe task {name!r}: choose NPATH or NULL (INSPECT's tasks are built "
                         "by probes.inspect.tasks.build_task; probes.catalog.build_tasks takes both)")
    labels = NPATH_BUCKETS if name == "NPATH" else NULL_LABELS
    if size < 2 * len(labels):
        raise InputError(f"task {name}: size {size} is too small for {len(labels)} classes; use size >= "
                         f"{2 * len(labels)} (1000 is the default)")
    start = time.perf_counter()
    snips = list(snippets) if snippets is not None else load_corpus(corpus, roots=roots)
    meta: dict[str, Any] = {"task": name, "description": PROBE_INFO[name], "source": "glueCode", "corpus": corpus,
                            "size_requested": size, "seed": seed, "n_snippets": len(snips),
                            "snippets_digest": hashlib.sha256("\n".join(s.id for s in snips).encode()).hexdigest()[:16],
                            "split_unit": "package (probes.gluecode.items.probe_splits)"}
    rng = np.random.default_rng([seed, TASKS.index(name)])
    rows = _npath_rows(snips, corpus, size, seed, meta, parsed) if name == "NPATH" else _null_rows(
        snips, corpus, size, rng, roots, workdir, meta)
    task = _finish(name, labels, rows, rng, meta)
    task.meta["build_seconds"] = round(time.perf_counter() - start, 3)
    return task


def _npath_rows(snips: Sequence[Snippet], corpus: str, size: int, seed: int, meta: dict[str, Any],
                parsed: dict[int, Any] | None) -> list[_Row]:
    from probes.gluecode.build import build_items_from, corpus_files

    report: dict[str, Any] = {}
    items = build_items_from("NPATH", snips, corpus_files(corpus), size=size, seed=seed, contexts=False,
                             report=report, parsed=parsed)
    meta.update(n_usable=report.get("n_usable", 0), skipped=report.get("skipped", {}),
                warnings=list(report.get("warnings", [])))  # logged by the build already
    return [(it.function, NPATH_BUCKETS.index(it.label), str(it.meta["snippet"]), str(it.meta["package"]))
            for it in items]


def _null_rows(snips: Sequence[Snippet], corpus: str, size: int, rng: np.random.Generator,
               roots: Sequence[Path] | None, workdir: str | Path | None, meta: dict[str, Any]) -> list[_Row]:
    from asc.confined import corpus_roots
    from probes.gluecode.callgraph import CorpusFiles
    from probes.gluecode.nullcheck import CHECKER, check_corpus
    from probes.gluecode.nulltoken import classify_functions

    result = check_corpus(corpus, workdir, roots)
    functions, _, _ = classify_functions(result, snips)
    positives = [f.snippet for f in functions if f.sites]
    negatives = [f.snippet for f in functions if not f.sites and not f.names_none]
    k = min(len(positives), len(negatives), size // 2)
    meta.update(n_usable=len(functions), checker=CHECKER, checker_version=result.mypy, flags=list(result.flags),
                files_checked=len(result.files), files_skipped=len(result.skipped), cached=result.cached,
                mypy_seconds=round(result.seconds, 2), positives_available=len(positives),
                negatives_available=len(negatives), label_meaning=NULL_MEANING)
    if not k:
        raise CorpusError(f"task NULL: the corpus gives {len(positives)} function(s) that mypy flags and "
                          f"{len(negatives)} clean one(s); both are needed: use a bigger corpus (stdlib, algorithms)")
    if k < size // 2:
        meta["warnings"] = [f"task NULL: {k} functions per class instead of {size // 2} ({len(positives)} flagged, "
                            f"{len(negatives)} clean available); a bigger corpus has more (the stdlib: 283 flagged)"]
        log.warning(meta["warnings"][0])
    chosen = {c: [pool[j] for j in rng.permutation(len(pool))[:k]] for c, pool in enumerate((negatives, positives))}
    meta["chars_median"] = {NULL_LABELS[c]: float(np.median([len(s.source) for s in v])) for c, v in chosen.items()}
    files = CorpusFiles(result.base, corpus_roots(corpus, roots))
    rows: list[_Row] = []
    for c, snippets in chosen.items():
        for snip in snippets:
            unit = files.package_name(snip.origin)  # the split unit of the zero-shot tasks
            rows.append((snip.source, c, snip.id, unit))
    return rows


def _finish(name: str, labels: Sequence[str], rows: list[_Row], rng: np.random.Generator,
            meta: dict[str, Any]) -> Task:
    """rows shuffled deterministically into a Task; counts, warnings and empty splits checked."""
    rows = [rows[j] for j in rng.permutation(len(rows))]
    y = np.array([r[1] for r in rows], dtype=np.int64)
    split = np.array(probe_splits([r[3] for r in rows]), dtype="<U2")
    warnings: list[str] = list(meta.pop("warnings", []))
    per_split = {s: int((split == s).sum()) for s in TASK_SPLITS}
    units = {s: len({r[3] for r, rs in zip(rows, split.tolist()) if rs == s}) for s in TASK_SPLITS}
    empty = [s for s, n in per_split.items() if not n]
    if empty:
        raise CorpusError(f"task {name}: no sample in split(s) {', '.join(empty)}: the {sum(units.values())} "
                          "package(s) of this corpus do not fill 60/20/20 splits by package; use a corpus with more "
                          "packages (stdlib, algorithms)")
    per_class_split = {lab: {s: int(((y == c) & (split == s)).sum()) for s in TASK_SPLITS}
                       for c, lab in enumerate(labels)}
    for s in TASK_SPLITS:
        missing = [lab for lab in labels if not per_class_split[lab][s]]
        if missing:
            warnings.append(f"task {name}: split {s} has no sample of class(es) {', '.join(missing)} (splits are "
                            "by package); a bigger corpus spreads the classes")
            log.warning(warnings[-1])
    meta.update(labels=list(labels), n=len(rows), warnings=warnings,
                per_class={lab: int((y == c).sum()) for c, lab in enumerate(labels)}, per_split=per_split,
                per_class_split=per_class_split, packages_per_split=units, snippet_ids=[r[2] for r in rows])
    return Task(name, tuple(labels), tuple(r[0] for r in rows), y, split, meta)
