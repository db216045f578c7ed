"""BLANCA's forum tasks (R, L, F) from the Python documentation: the FAQ stands in for forum posts, the Library
Reference for class and function documentation. Offline: the reStructuredText sources that Debian's
``python3.11-doc`` installs under :data:`DOCS_ROOT` (``make docs-data`` installs it as root); without them the
builders raise a :class:`~asc.errors.CorpusError` that says so.

- **Questions** (:func:`faq_questions`): on each FAQ page, a section with a title and text of its own and no
  subsection is a question (a category title such as "General Library Questions" has no text of its own, the
  page title is level 0); its answer is its body up to the next title, as plain text (:mod:`probes.blanca.rst`),
  with the ``:class:``/``:exc:``/``:func:``/``:meth:``/``:mod:`` targets it references.
- **R** (:func:`rank_items`): each question against every answer of its page, grade 1 for its own answer and 0
  for the others (the FAQ has one answer per question and no votes, unlike the paper's StackOverflow answers with
  vote counts; ``n_answers`` keeps the own answer and a seeded sample of the others instead, the paper's
  questions have 4.9 answers on average).
- **F** (:func:`forum_class_items`): a question with its answer vs the Library Reference entry of a class,
  exception, function or method the answer references (resolved by exact dotted name; built-ins by bare name):
  positive. Hard negatives: up to ``negatives`` entries of the *same module* and the same kind where there are
  enough (else the same family, class-like or function-like) that the answer does not reference, nor a member or
  owner of what it references, drawn with a seeded ``random.Random``; the paper's
  hard negatives are posts that match the class or package name without naming both (3.3 negatives per positive
  in its training data, hence the default of 3). ``group`` ties a positive to its negatives.
- **L** (:func:`linked_items`): the FAQ has only a couple of dozen ``:ref:`` links, so sections of the FAQ,
  Library Reference, HOWTOs, tutorial and Language Reference are used: two sections are linked when one holds a
  ``:ref:`` to a label of the other. Positives are linked pairs, negatives the same number of seeded random pairs
  with no link either way; by default both are drawn across pages only (a link within a page joins neighbours that
  share a topic anyway, and random pairs are almost never on one page). Sections with less than ``min_chars``
  of text are left out. The paper balances 50/50 too.

Splits: R and F items by a stable hash of the question (so one answer is never in two splits across R and F),
L items by the pair; 10% test as in the paper.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from asc.confined import read_user_file
from asc.errors import CorpusError
from probes.blanca.items import PairItem, RankItem, split_of
from probes.blanca.rst import DocEntry, Section, doc_entries, plain_text, read_sections, role_targets

__all__ = ["DOCS_ROOT", "ENTRY_FOLDERS", "LINK_FOLDERS", "FaqQuestion", "doc_sections", "docs_root", "entry_lookup", "faq_questions",
           "forum_class_items", "library_entries", "linked_items", "questions_of_page", "rank_items"]

DOCS_ROOT = Path("/usr/share/doc/python3.11/html/_sources")
LINK_FOLDERS = ("faq", "library", "howto", "tutorial", "reference")
ENTRY_FOLDERS = ("library", "reference")
_MAX_PAGE_BYTES = 8 * 2**20  # one reST page (the largest of Python 3.11: 0.3 MB)
_CLASS_LIKE = {"class", "exception"}
_ENTRY_ROLES = ("class", "exc", "func", "meth")


@dataclass(frozen=True)
class FaqQuestion:
    """A FAQ question, its answer as plain text, and the ``(role, target)`` cross-references of the answer."""

    id: str
    page: str
    question: str
    answer: str
    targets: tuple[tuple[str, str], ...]


def docs_root(root: str | Path | None = None) -> Path:
    """The folder of the documentation's reST sources (``_sources``), checked; :data:`DOCS_ROOT` by default."""
    path = Path(root) if root is not None else DOCS_ROOT
    if not sorted((path / "faq").glob("*.rst.txt")):
        raise CorpusError(f"the Python documentation sources are missing ({path / 'faq'} has no .rst.txt pages): "
                          "install Debian's python3.11-doc (`apt-get install python3.11-doc`, which `make docs-data` "
                          "does as root) or give the folder of another copy's reST sources")
    return path


def _pages(root: Path, folder: str) -> list[tuple[str, str]]:
    """The reST pages of ``root/folder`` (regular files of at most 8 MB: a FIFO or a device there is refused)."""
    out = []
    for p in sorted((root / folder).glob("*.rst.txt")):
        data = read_user_file(p, _MAX_PAGE_BYTES, "documentation page", fix="give the documentation's _sources folder")
        try:
            out.append((f"{folder}/{p.name.removesuffix('.rst.txt')}", data.decode("utf-8")))
        except UnicodeDecodeError as err:
            raise CorpusError(f"{p} is not valid UTF-8 ({err.reason}): give the documentation's _sources folder"
                              ) from None
    return out


def questions_of_page(text: str, page: str) -> list[FaqQuestion]:
    """The questions of one FAQ page (a section with text and no subsection, not the page title)."""
    sections = read_sections(text, page)
    out = []
    for k, sec in enumerate(sections):
        leaf = k + 1 == len(sections) or sections[k + 1].level <= sec.level
        answer = plain_text(sec.body)
        if sec.level > 0 and leaf and answer:
            out.append(FaqQuestion(sec.id, page, sec.title, answer, tuple(role_targets(sec.body))))
    return out


def faq_questions(root: str | Path | None = None) -> list[FaqQuestion]:
    """Every question of the FAQ pages (``faq/*.rst.txt``), page by page."""
    base = docs_root(root)
    return [q for page, text in _pages(base, "faq") for q in questions_of_page(text, page)]


def library_entries(root: str | Path | None = None, folders: Sequence[str] = ENTRY_FOLDERS) -> list[DocEntry]:
    """The documented classes, exceptions, functions and methods of the Library Reference (and the Language
    Reference, which documents ``object.__getattr__`` and the other special methods)."""
    base = docs_root(root)
    return [e for folder in folders for page, text in _pages(base, folder) for e in doc_entries(text, page)]


def entry_lookup(entries: Sequence[DocEntry]) -> dict[str, DocEntry]:
    """Dotted name (and, for built-ins, the bare name) to entry; the first page in name order wins a clash."""
    out: dict[str, DocEntry] = {}
    for e in entries:
        out.setdefault(e.name, e)
        if e.module == "builtins":
            out.setdefault(e.qualname, e)
    return out


def rank_items(questions: Sequence[FaqQuestion], n_answers: int | None = None, seed: int = 0,
               test_share: float = 0.1) -> list[RankItem]:
    """R items: each question with the answers of its page (all, or its own and ``n_answers - 1`` drawn)."""
    rng = random.Random(seed)
    by_page: dict[str, list[FaqQuestion]] = {}
    for q in questions:
        by_page.setdefault(q.page, []).append(q)
    items = []
    for q in questions:
        others = [o for o in by_page[q.page] if o.id != q.id]
        if n_answers is not None and len(others) > n_answers - 1:
            keep = {o.id for o in rng.sample(others, max(n_answers - 1, 1))}
            others = [o for o in others if o.id in keep]
        if not others:
            continue
        answers = sorted([q, *others], key=lambda a: by_page[q.page].index(a))
        items.append(RankItem(f"R/{q.id}", split_of(q.id, test_share), q.question, tuple(a.answer for a in answers),
                              tuple(1.0 if a.id == q.id else 0.0 for a in answers), {"page": q.page}))
    return items


def _related(name: str, referenced: set[str]) -> bool:
    return any(name == r or name.startswith(f"{r}.") or r.startswith(f"{name}.") for r in referenced)


def forum_class_items(questions: Sequence[FaqQuestion], entries: Sequence[DocEntry], negatives: int = 3,
                      seed: int = 0, test_share: float = 0.1) -> list[PairItem]:
    """F items: each answer vs the entries it references (positive) and same-module hard negatives."""
    lookup = entry_lookup(entries)
    by_module: dict[str, list[DocEntry]] = {}
    for e in entries:
        if lookup.get(e.name) is e:
            by_module.setdefault(e.module, []).append(e)
    rng = random.Random(seed)
    items = []
    for q in questions:
        resolved = [lookup[t] for role, t in q.targets if role in _ENTRY_ROLES and t in lookup]
        positives = list({e.name: e for e in resolved}.values())
        referenced = {e.name for e in positives}
        post, split = f"{q.question}\n\n{q.answer}", split_of(q.id, test_share)
        for pos in positives:
            group = f"F/{q.id}|{pos.name}"
            items.append(PairItem("F", group, split, post, pos.text, True, group, q.id, pos.name,
                                  {"kind": pos.kind, "module": pos.module}))
            family = (pos.kind in _CLASS_LIKE)
            pool = [e for e in by_module.get(pos.module, [])
                    if (e.kind in _CLASS_LIKE) == family and not _related(e.name, referenced)]
            same_kind = [e for e in pool if e.kind == pos.kind]
            pool = same_kind if len(same_kind) >= negatives else pool
            for neg in (rng.sample(pool, negatives) if len(pool) > negatives else pool):
                items.append(PairItem("F", f"{group}|{neg.name}", split, post, neg.text, False, group, q.id, neg.name,
                                      {"kind": neg.kind, "module": neg.module}))
    return items


def doc_sections(root: str | Path | None = None, folders: Sequence[str] = LINK_FOLDERS) -> list[Section]:
    """The sections of every page in ``folders`` of the documentation sources."""
    base = docs_root(root)
    return [s for folder in folders for page, text in _pages(base, folder) for s in read_sections(text, page)]


def linked_items(sections: Sequence[Section], min_chars: int = 200, max_chars: int = 2000, cross_page: bool = True,
                 seed: int = 0, test_share: float = 0.1) -> list[PairItem]:
    """L items: section pairs joined by a ``:ref:`` (positive) and as many unlinked random pairs (negative)."""
    owner = {label: s.id for s in sections for label in s.labels}
    texts = {s.id: f"{s.title}\n\n{plain_text(s.body)}"[:max_chars].strip() for s in sections}
    eligible = {s.id: s for s in sections if len(texts[s.id]) - len(s.title) >= min_chars}
    links: set[tuple[str, str]] = set()
    for s in sections:
        for _, label in role_targets(s.body, ("ref",)):
            target = owner.get(label)
            if target and target != s.id:
                links.add((min(s.id, target), max(s.id, target)))
    page = {s.id: s.page for s in sections}
    positives = sorted(p for p in links if p[0] in eligible and p[1] in eligible
                       and (not cross_page or page[p[0]] != page[p[1]]))
    rng = random.Random(seed)
    ids = sorted(eligible)
    negatives: set[tuple[str, str]] = set()
    for _ in range(50 * len(positives) + 100):
        if len(negatives) >= len(positives) or len(ids) < 2:
            break
        a, b = sorted(rng.sample(ids, 2))
        if (a, b) not in links and (not cross_page or page[a] != page[b]):
            negatives.add((a, b))
    items = []
    for (a, b), positive in [*((p, True) for p in positives), *((n, False) for n in sorted(negatives))]:
        ident = f"L/{a}|{b}"
        items.append(PairItem("L", ident, split_of(ident, test_share), texts[a], texts[b], positive, "", a, b))
    return items
