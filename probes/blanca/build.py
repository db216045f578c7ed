"""Task sets for BLANCA: the five task files built once from the Python documentation and standard library.

A task set is a folder ``<out>/tasks/<name>/`` holding ``R.jsonl`` ... ``U.jsonl`` in the format of
:mod:`probes.blanca.items` and a ``skipped.json`` that says which tasks could not be built and why. The name
records what the set was built from (``stdlib-seed0``, ``package-sqlalchemy-seed0``), and a set is never rebuilt
in place: runs that scored its items keep pointing at the same items.

Sources (no network, nothing downloaded):

- R, F, L from the documentation's reStructuredText sources (Debian's ``python3.11-doc``; :mod:`probes.blanca.faq`).
  Where they are missing the three tasks are skipped with the fix in ``skipped.json``, and H and U still build.
- H from the classes of the standard library, U from a static scan (``ast``) of its source, its test suite
  included: nothing is imported or executed for U.
- With ``packages`` (``--package NAME``), H and U are about those packages alone, in a set of their own
  (``package-NAME-seed0``): the classes *defined* in them (:meth:`~probes.blanca.classes.ClassCatalog.of_packages`,
  whose modules are *imported* to read their docstrings and MRO: their top-level code runs, so this needs
  ``import_packages=True``; the standard library is not scanned) and the methods called on them in the packages'
  source folders (and the test suites they ship). Pooled with the standard library's classes, as before issue 32,
  the sampling by distance drowned them (PyYAML gave 1 H pair of 1,431). A package that gives fewer than
  :data:`MIN_TEST_PAIRS` test pairs for a task asked for is refused in one line (:class:`~asc.errors.CorpusError`)
  with its counts: PyYAML 6.0.3 (85 classes, 2 with a docstring of their own; no U use in its own code) and
  more-itertools 11.2.1 (14 classes, 12 documented: 1 H pair; no U use) are; networkx 3.6.1 gives H 398 pairs
  (51 test) from 79 documented classes and U 136 (12 test) from 580 files, SQLAlchemy 2.1.9 H 2,000 (184 test)
  and U 105 (12 test). R, F and L are the documentation's in every set.

Departures from the paper: its data come from Graph4Code (1.3 million GitHub programs, StackOverflow posts with
votes); ours from the FAQ (one accepted answer per question, no votes: R grades are 1 for a question's own answer
and 0 for the other answers of its FAQ page), the library reference (F's documentation, L's ``:ref:`` links) and
the standard library's classes. Sizes are hundreds of items per task, not hundreds of thousands.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from asc.atomic import write_atomic
from asc.errors import AscError, CorpusError, InputError
from probes.blanca.items import BLANCA_TASKS, BlancaItem, ScoredPairItem, load_items, save_items

if TYPE_CHECKING:
    from probes.blanca.classes import ClassCatalog

__all__ = ["MIN_TEST_PAIRS", "BlancaTaskSet", "blanca_set_name", "build_task_set", "load_task_set", "parse_tasks"]

PER_DISTANCE = 200  # H pairs drawn per MRO distance (all where fewer)
PER_BIN = 200  # U pairs drawn per similarity bin
MIN_TEST_PAIRS = 3  # a named package's H or U: Pearson's r with a p-value (probes.blanca.metrics.pearson) needs 3


@dataclass(frozen=True)
class BlancaTaskSet:
    """The items of one task set: ``items[task]`` in file order, each task file's ``headers[task]``, and
    ``skipped[task]``, the reason a task could not be built (the fix is in it)."""

    folder: Path
    items: dict[str, list[BlancaItem]] = field(default_factory=dict)
    headers: dict[str, dict] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.folder.name

    def only(self, tasks: Sequence[str]) -> BlancaTaskSet:
        """The same set restricted to ``tasks``."""
        return BlancaTaskSet(self.folder, {t: v for t, v in self.items.items() if t in tasks},
                             {t: v for t, v in self.headers.items() if t in tasks},
                             {t: v for t, v in self.skipped.items() if t in tasks})

    def counts(self) -> dict[str, tuple[int, int]]:
        """Items per task: ``(train, test)``."""
        return {t: (sum(it.split == "train" for it in items), sum(it.split == "test" for it in items))
                for t, items in self.items.items()}

    def size_lines(self) -> list[str]:
        """``H: 398 items (51 test; classes of networkx)``, one line per task, as the command line prints them."""
        lines = []
        for task, (train, test) in self.counts().items():
            of = self.headers.get(task, {}).get("provenance", {}).get("classes_of")
            lines.append(f"{task}: {train + test} items ({test} test{'; classes of ' + ', '.join(of) if of else ''})")
        return lines


def parse_tasks(text: str | Sequence[str]) -> list[str]:
    """``"R,L"`` or ``["R", "L"]`` or ``"all"`` -> task letters in the paper's order, checked."""
    raw = [text] if isinstance(text, str) else list(text)
    names = [t.strip().upper() for part in raw for t in part.split(",") if t.strip()]
    if not names or names == ["ALL"]:
        return list(BLANCA_TASKS)
    wrong = [t for t in names if t not in BLANCA_TASKS]
    if wrong:
        raise InputError(f"unknown BLANCA task {', '.join(wrong)}: choose among {', '.join(BLANCA_TASKS)} or all")
    return [t for t in BLANCA_TASKS if t in names]


def blanca_set_name(packages: Sequence[str] = (), seed: int = 0) -> str:
    """The folder name of a task set: what it was built from (the standard library, or the packages whose own
    classes H and U are about) and the seed."""
    for p in packages:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p):
            raise InputError(f"--package {p!r}: give an importable top-level package name such as sqlalchemy")
    return ("package-" + "+".join(sorted(set(packages))) if packages else "stdlib") + f"-seed{seed}"


def _package_roots(packages: Sequence[str]) -> list[Path]:
    import importlib.util

    roots = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise InputError(f"--package {name}: no installed package of that name; pip install it first")
        roots += [Path(p) for p in spec.submodule_search_locations]
    return roots


def build_task_set(out: str | Path, tasks: Sequence[str] = BLANCA_TASKS, *, packages: Sequence[str] = (),
                   import_packages: bool = False, docs: str | Path | None = None, seed: int = 0,
                   on_stage: Callable[[str], None] | None = None) -> BlancaTaskSet:
    """The task set ``<out>/tasks/<blanca_set_name(packages, seed)>``: loaded when its files exist, else built
    (only the missing tasks). ``docs`` is the documentation's ``_sources`` folder (Debian's by default)."""
    from probes.blanca import faq

    folder = Path(out) / "tasks" / blanca_set_name(packages, seed)
    if packages and not import_packages:
        raise InputError(f"--package {', '.join(packages)} imports that package's modules to read class docs "
                         "(their top-level code runs): confirm with --import-packages")
    if packages:
        _package_roots(packages)  # an unknown package is refused before any task file is written
    skipped_path = folder / "skipped.json"
    skipped: dict[str, str] = json.loads(skipped_path.read_text()) if skipped_path.exists() else {}
    wanted = parse_tasks(list(tasks))
    missing = [t for t in wanted if not (folder / f"{t}.jsonl").exists() and t not in skipped]
    stage = on_stage or (lambda _: None)
    provenance = {"source": "python documentation + standard library", "packages": sorted(set(packages)),
                  "seed": seed, "builder": "probes.blanca.build"}
    if any(t in missing for t in ("R", "F", "L")):
        try:
            root = faq.docs_root(docs)
        except AscError as err:
            for t in ("R", "F", "L"):
                if t in missing:
                    skipped[t] = str(err)
        else:
            questions = faq.faq_questions(root)
            if "R" in missing:
                stage("R: FAQ questions and answers")
                save_items(folder / "R.jsonl", "R", faq.rank_items(questions, seed=seed),
                           {**provenance, "docs": str(root)})
            if "F" in missing:
                stage("F: FAQ answers vs the library reference")
                entries = faq.library_entries(root)
                save_items(folder / "F.jsonl", "F", faq.forum_class_items(questions, entries, seed=seed),
                           {**provenance, "docs": str(root)})
            if "L" in missing:
                stage("L: documentation sections and their :ref: links")
                save_items(folder / "L.jsonl", "L", faq.linked_items(faq.doc_sections(root), seed=seed),
                           {**provenance, "docs": str(root)})
    if "H" in missing or "U" in missing:
        built = (_package_tasks(packages, [t for t in ("H", "U") if t in missing], seed, stage) if packages else
                 _stdlib_tasks([t for t in ("H", "U") if t in missing], seed, stage))
        for task, (task_items, details) in built.items():
            save_items(folder / f"{task}.jsonl", task, task_items, {**provenance, **details})
    if missing:
        write_atomic(skipped_path, lambda tmp: tmp.write_text(json.dumps(skipped, indent=1)))
    return load_task_set(folder, wanted)


def _stdlib_tasks(tasks: Sequence[str], seed: int, stage: Callable[[str], None]
                  ) -> dict[str, tuple[list[ScoredPairItem], dict]]:
    """H and U (those in ``tasks``) from the standard library's classes and source: ``{task: (items, details)}``."""
    from probes.blanca import classes, usage

    stage("H, U: importing modules to read class documentation")
    catalog = classes.scan_classes()
    out: dict[str, tuple[list[ScoredPairItem], dict]] = {}
    if "H" in tasks:
        out["H"] = classes.hierarchy_items(catalog, PER_DISTANCE, seed=seed), {"classes": len(catalog.documented())}
    if "U" in tasks:
        stage("U: scanning source for methods called on instances")
        index = usage.scan_usage(None, known=_names(catalog))
        out["U"] = usage.usage_items(index, catalog, per_bin=PER_BIN, seed=seed), {"files": index.files}
    return out


def _package_tasks(packages: Sequence[str], tasks: Sequence[str], seed: int, stage: Callable[[str], None]
                   ) -> dict[str, tuple[list[ScoredPairItem], dict]]:
    """H and U (those in ``tasks``) about the classes defined in ``packages`` alone (see the module docstring);
    a :class:`CorpusError` when one gives fewer than :data:`MIN_TEST_PAIRS` test pairs."""
    from probes.blanca import classes, usage

    named = sorted(set(packages))
    stage(f"H, U: importing {', '.join(named)} to read class documentation")
    catalog = classes.scan_classes([], packages=named, import_packages=True).of_packages(named)
    scope = {"source": f"the classes defined in {', '.join(named)}", "classes_of": named,
             "classes": len(catalog.classes), "documented": len(catalog.documented())}
    out: dict[str, tuple[list[ScoredPairItem], dict]] = {}
    if "H" in tasks:
        out["H"] = classes.hierarchy_items(catalog, PER_DISTANCE, seed=seed), scope
    if "U" in tasks:
        stage(f"U: scanning {', '.join(named)} for methods called on instances")
        index = usage.scan_usage(_package_roots(named), known=_names(catalog))
        out["U"] = usage.usage_items(index, catalog, per_bin=PER_BIN, seed=seed), {**scope, "files": index.files}
    for task, (task_items, details) in out.items():
        n_test = sum(it.split == "test" for it in task_items)
        if n_test < MIN_TEST_PAIRS:
            what = ("within MRO distance 10" if task == "H" else
                    f"of classes with 2 or more methods called on them in its {details['files']} files")
            used = len({n for it in task_items for n in (it.name_a, it.name_b)})
            raise CorpusError(
                f"--package {', '.join(named)} is too small for {task}: {details['documented']} of its "
                f"{details['classes']} classes have a docstring of their own, which give {len(task_items)} "
                f"pair{'' if len(task_items) == 1 else 's'} {what} "
                f"({used} classes, {n_test} pairs in the test split); {task} needs {MIN_TEST_PAIRS} test pairs or more "
                f"(Pearson's r; about {MIN_TEST_PAIRS * 10} pairs, 10% are test): name a package with more documented "
                f"classes, or leave {task} out of --tasks")
    return out


def _names(catalog: ClassCatalog) -> set[str]:
    """Every name a class of the catalog is known by (for the usage scan's class resolution)."""
    return {c.name for c in catalog.classes} | {a for c in catalog.classes for a in c.aliases}


def load_task_set(folder: str | Path, tasks: Sequence[str] = BLANCA_TASKS) -> BlancaTaskSet:
    """The task files of ``folder`` (validated on load); tasks without a file are reported as skipped."""
    folder = Path(folder)
    skipped_path = folder / "skipped.json"
    recorded: dict[str, str] = json.loads(skipped_path.read_text()) if skipped_path.exists() else {}
    items, headers, skipped = {}, {}, {}
    for task in parse_tasks(list(tasks)):
        path = folder / f"{task}.jsonl"
        if path.exists():
            headers[task], items[task] = load_items(path)
        else:
            skipped[task] = recorded.get(task, f"no {path.name} in {folder}: build the task set first")
    return BlancaTaskSet(folder, items, headers, skipped)
