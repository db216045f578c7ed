"""INSPECT probing tasks for Python (Karmakar & Robbes, "INSPECT", sections 3 and 5.1), built from snippets.

``build_task(name, snippets, size=1000, seed=0)`` turns Python functions (``asc.corpus.sources.load_corpus``, default
corpus ``stdlib``) into one of the 15 tasks; ``load_tsv`` reads INSPECT's own files. Every task has balanced
classes (``size // n_classes`` each; when a class has fewer eligible samples every class shrinks to the rarest
one's count, with a logged warning kept in ``meta["warnings"]``; fewer than 5 per class is an error), 60/20/20
train/dev/test splits per class (``tr``/``va``/``te``), and is deterministic given (snippets, size, seed): only
``np.random.default_rng(seed)`` is used. Snippets that do not parse with ``ast`` (or are no function) are skipped.
Texts are the functions as extracted (docstrings and comments kept), except KTX (a context) and IDN (an
identifier). Like the paper, shorter functions are preferred to avoid truncation: every class first draws from
functions of at most ``SHORT_CHARS`` = 1200 characters (90% of stdlib), then from longer ones (not for LEN,
whose label is the length). "Code tokens" are tokenize's NAME, NUMBER, STRING and OP tokens (no comment, NL,
NEWLINE, INDENT/DEDENT; an f-string is one token on every Python version).

Label definitions (Python adaptation):

* KTX (10): the class of the LAST token of the text, a keyword/operator/symbol token (tokenize, never in a string
  or comment). kw_definition: def class lambda global nonlocal del async await; kw_exception: try except finally
  raise assert with; kw_flow: if elif else for while break continue return pass yield; kw_module: import from as;
  op_arithmetic: + - * / // % ** @; op_assignment: = += -= *= /= //= %= **= @= &= |= ^= >>= <<= :=;
  op_bitwise: & | ^ ~ << >>; op_logical: and or not in is; op_relational: == != < > <= >=; symbol: ( ) [ ] { } :
  , . ; ->. A token belongs to its class by identity (the ``=`` of a keyword argument is op_assignment). Text =
  up to 6 preceding lines + the token's line up to and including the token (a decoder's last position is the
  token in context); texts are distinct. The split is BY TOKEN, not random: each class's tokens seen in the
  corpus are shuffled and dealt to tr/va/te (20% of the tokens, at least one, to each of va and te; 3 tokens:
  one each), so test tokens never occur in training (``meta["split_tokens"]``); among up to 64 shuffles the first
  that supplies enough contexts is kept. Samples cycle over a split's tokens so one frequent token cannot fill it.
* IDN (4): the text is one identifier, distinct per class. module: dotted names of ``import``/``from`` statements,
  ``import ... as`` aliases, and Name bases of attributes that are imported or in ``sys.stdlib_module_names``
  (and not a local variable); class: ``class`` names and Name/Attribute bases, ``except`` types, ``raise X``
  (capitalized), the second argument of isinstance/issubclass, calls of builtin types or CapWords names;
  function: ``def`` names and calls of names starting with a lowercase letter; variable: as VCU. An identifier
  seen in two classes anywhere in the corpus goes to neither. stdlib gives 182 unambiguous module names (247
  before removing the ambiguous ones, e.g. ``copy``, ``time``), 969 class, 6188 function, 4966 variable names:
  IDN shrinks to 182 per class (728 samples).
* LEN (5): number of code tokens, bins 0-30, 31-45, 46-65, 66-110, 111+ (the stdlib quintiles: about 1,600-1,800
  functions per bin, median 53).
* TYP, REA, JBL, SRI, SRK, SCK (binary: correct, mutated): both classes come from functions where the mutation is
  possible, correct and mutated samples are different functions, and one token (JBL: two) is changed.
  TYP: one Name (ast) of a builtin type (int str float bool list dict set tuple bytes object complex frozenset
  bytearray type range memoryview slice) misspelled by swapping two adjacent letters, dropping or doubling one;
  the result is no keyword, builtin or name of the function. REA: one of == != < > <= >= replaced by one of = +=
  -= *= /= //= %= **= @= &= |= ^= >>= <<=. JBL: two adjacent, different code tokens on the same line swapped,
  the whitespace between them kept. SRI: one non-keyword NAME token replaced by another NAME of the same function.
  SRK: one keyword (keyword.kwlist, True/False/None included) replaced by another keyword. SCK: one keyword
  replaced by another of its KTX class (kw_* or op_logical, e.g. if->while, and->or, break->continue). SRK/SCK
  never touch the leading ``def``/``async def`` of the function.
* OCU (10): number of distinct operator tokens of the five KTX operator classes, exact values 0-9 (token
  identity, as in KTX: ``=`` of keyword arguments, ``*`` of ``*args``, ``in`` of ``for`` count).
* VCU (10): number of distinct variables, exact values 1-10: parameters (lambdas and nested functions too) and
  names bound by assignment, augmented/annotated assignment, for, with-as, comprehensions, walrus, except-as and
  match captures; attributes, and names of nested functions, classes and imports are not variables.
* CSC (10): number of code structures, exact values 0-9: if statements (each elif counts), for, while, try, with
  and match statements, nested functions included (comprehensions and conditional expressions are not).
* MXN (5): deepest statement nesting, the function body is 1 and every block adds 1 (``elif``/``else``/
  ``except`` bodies are one deeper than their ``if``/``try``; ``case`` bodies two deeper than ``match``, as
  indented); classes 1, 2, 3, 4, 5+.
* CPX (10): cyclomatic complexity as decision points = McCabe CCN - 1, computed on ``ast`` (not lizard): +1 per
  if/elif, conditional expression, for, while, except clause, comprehension ``for`` and ``if``, match case, and
  per extra operand of and/or; nested functions included. Exact values 0-9 (CCN 1-10).
* NPT (10): NPath (Nejmeh 1988, PMD rules) over the body, nested functions/classes = 1. Sequence: product.
  if/while: bool + NP(body) + NP(else or 1); for: NP(body) + NP(else or 1); try: NP(body) + sum NP(handlers) +
  NP(else) + NP(finally) (absent parts 0); with: NP(body); match: bool(subject) + sum(bool(guard) + NP(case)) + 1
  without a wildcard case; return: max(1, bool(value) + ternaries if > 1); other statements: product over their
  conditional expressions (bool(test) + NP(then) + NP(else)), else 1. ``bool`` = number of and/or operators.
  Bins 1, 2, 3, 4-6, 7-8, 9-10, 11-15, 16-20, 21-30, 31-100; values over 100 are left out.

Observed on stdlib (8,482 functions, size 1000): every task but IDN reaches its full size; the rarest classes
are OCU 9 (102 functions), CSC 9 (123), CPX 9 (121), VCU 10 (141), NPT 9-10 (184), MXN 5+ (271). Build time is
2-5 s a task (mostly ``ast.parse`` of every function: once for all the tasks of one :func:`probes.catalog.build_tasks`). ``size=10000`` shrinks (balanced) to: JBL 8456, SRI 8452,
LEN 8045, SRK 8016, SCK 7708, KTX 3570 (op_bitwise), REA 2502, TYP 1842 (functions naming a builtin type), NPT
1840, VCU 1410, MXN 1355, CSC 1230, CPX 1210, OCU 1020, IDN 728.

TSV files: one sample a line, ``split<TAB>label<TAB>text``. :meth:`Task.to_tsv` writes a first line
``#asc-studio escaped`` and escapes backslash, newline, tab and CR as ``\\\\``, ``\\n``, ``\\t``, ``\\r``;
:func:`load_tsv` unescapes only after that line (INSPECT's files are read raw), skips malformed rows (wrong
field count, unknown split, empty text; INSPECT's MXN file has rows broken by newlines) with one warning, and
sorts labels naturally (numbers as numbers).
"""

from __future__ import annotations

import ast
import hashlib
import logging
import re
import time
import tokenize
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from asc.errors import InputError
from probes.inspect.labels import (
    IDN_CLASSES,
    KTX_CLASSES,
    KTX_OF,
    LEN_BINS,
    NPT_BINS,
    code_structures,
    code_token_list,
    code_tokens,
    decision_points,
    function_node,
    identifier_kinds,
    max_depth,
    mutate,
    mutation_sites,
    npath,
    unique_operators,
    unique_variables,
)
from probes.inspect.taskfile import TASK_SPLITS, Task, load_tsv
from probes.pyast import gc_paused

if TYPE_CHECKING:
    from asc.corpus.sources import Snippet

__all__ = ["SHORT_CHARS", "TASK_INFO", "TASK_NAMES", "TASK_SPLITS", "Task", "build_task", "load_tsv"]

log = logging.getLogger(__name__)

TASK_NAMES = ("KTX", "IDN", "LEN", "TYP", "REA", "JBL", "SRI", "SRK", "SCK", "OCU", "VCU", "CSC", "MXN", "CPX", "NPT")
TASK_INFO = {
    "KTX": "Keyword tagging: class of the last keyword/operator/symbol token in its context (10 classes)",
    "IDN": "Identifier tagging: is the identifier a module, class, function or variable name (4 classes)",
    "LEN": "Code length: number of code tokens, binned 0-30, 31-45, 46-65, 66-110, 111+ (5 classes)",
    "TYP": "Invalid type: is one builtin type name misspelled (binary)",
    "REA": "Relational to assignment: is one relational operator replaced by an assignment operator (binary)",
    "JBL": "Jumbled code: are two adjacent tokens swapped (binary)",
    "SRI": "Switched identifier: is one identifier replaced by another of the same function (binary)",
    "SRK": "Switched random keyword: is one keyword replaced by a random keyword (binary)",
    "SCK": "Switched compatible keyword: is one keyword replaced by one of the same class (binary)",
    "OCU": "Operator count unique: number of distinct operator tokens, 0 to 9 (10 classes)",
    "VCU": "Variable count unique: number of distinct variables, 1 to 10 (10 classes)",
    "CSC": "Code structure count: number of if/elif/for/while/try/with/match statements, 0 to 9 (10 classes)",
    "MXN": "Maximum nesting: deepest statement block, body = 1, classes 1, 2, 3, 4, 5+ (5 classes)",
    "CPX": "Cyclomatic complexity: decision points (McCabe CCN - 1), 0 to 9 (10 classes)",
    "NPT": "NPath complexity, binned 1, 2, 3, 4-6, 7-8, 9-10, 11-15, 16-20, 21-30, 31-100 (10 classes)",
}
SHORT_CHARS = 1200  # functions up to this many characters are sampled first (about 90% of stdlib)
CONTEXT_LINES = 6
MIN_PER_CLASS = 5

_BINARY = ("correct", "mutated")
_Function = ast.FunctionDef | ast.AsyncFunctionDef


# ---------------------------------------------------------------------------------------------- sampling
def _split_sizes(k: int) -> tuple[int, int, int]:
    n_va = int(round(k * 0.2))
    return k - 2 * n_va, n_va, n_va


def _prefer_short(items: Sequence[int], lengths: Sequence[int], rng) -> list[int]:
    """Items of at most SHORT_CHARS characters in random order, then the longer ones in random order."""
    short = [i for i in items if lengths[i] <= SHORT_CHARS]
    long_ = [i for i in items if lengths[i] > SHORT_CHARS]
    return [short[j] for j in rng.permutation(len(short))] + [long_[j] for j in rng.permutation(len(long_))]


class _Builder:
    def __init__(self, name: str, snippets: Sequence[Snippet], size: int, seed: int,
                 parsed: dict[int, _Function | None]):
        self.name, self.size, self.rng = name, size, np.random.default_rng(seed)
        kept = [(i, s) for i, s in enumerate(snippets) if getattr(s, "language", "python") == "python"]
        self.snippets = [s for _, s in kept]
        self.funcs = [parsed[i] if i in parsed else parsed.setdefault(i, function_node(s.source)) for i, s in kept]
        self.lengths = [len(s.source) for s in self.snippets]
        unique = {s.source: i for i, s in reversed(list(enumerate(self.snippets)))}  # first of identical sources
        self.ok = [i for i, f in enumerate(self.funcs) if f is not None and unique[self.snippets[i].source] == i]
        self.warnings: list[str] = []
        self.meta = {"task": name, "description": TASK_INFO[name], "size_requested": size, "seed": seed,
                     "n_snippets": len(snippets), "n_usable": len(self.ok), "short_chars": SHORT_CHARS,
                     "snippets_digest": hashlib.sha256("\n".join(s.id for s in snippets).encode()).hexdigest()[:16]}

    def func(self, i: int) -> ast.FunctionDef | ast.AsyncFunctionDef:
        """The function of snippet ``i``, one of ``self.ok`` (those parse as a function)."""
        f = self.funcs[i]
        assert f is not None, "only snippets in self.ok have a function"
        return f

    def per_class(self, available: dict[str, int], n_classes: int) -> int:
        """Samples per class: size // n_classes, shrunk (with a warning) to the rarest class's availability."""
        want = self.size // n_classes
        if want < MIN_PER_CLASS:
            raise InputError(f"task {self.name}: size {self.size} gives {want} sample(s) per class for {n_classes} "
                             f"classes; use size >= {MIN_PER_CLASS * n_classes}")
        self.meta["available"] = dict(available)
        k = min([want, *available.values()])
        if k < MIN_PER_CLASS:
            raise InputError(f"task {self.name}: only {k} sample(s) for the rarest class ({available}); at least "
                             f"{MIN_PER_CLASS} per class are needed: use a bigger corpus such as 'stdlib'")
        if k < want:
            rare = min(available, key=available.__getitem__)
            self.warn(f"task {self.name}: class {rare!r} has only {available[rare]} eligible samples, so every "
                      f"class gets {k} instead of {want} (balanced)")
        return k

    def warn(self, message: str) -> None:
        log.warning(message)
        self.warnings.append(message)

    def finish(self, labels, rows) -> Task:
        """rows: (text, class index, split, snippet id); shuffled deterministically into a Task."""
        rows = [rows[j] for j in self.rng.permutation(len(rows))]
        y = np.array([r[1] for r in rows], dtype=np.int64)
        split = np.array([r[2] for r in rows], dtype="<U2")
        self.meta.update(labels=list(labels), n=len(rows), warnings=self.warnings,
                         per_class={lab: int((y == c).sum()) for c, lab in enumerate(labels)},
                         per_split={s: int((split == s).sum()) for s in TASK_SPLITS},
                         snippet_ids=[r[3] for r in rows])
        return Task(self.name, tuple(labels), tuple(r[0] for r in rows), y, split, self.meta)

    def by_label(self, labels, label_of: Callable[[int], str | None], prefer_short=True) -> Task:
        """One function per sample; label_of(snippet index) gives its class name or None (ineligible)."""
        pools: dict[str, list[int]] = {lab: [] for lab in labels}
        for i in self.ok:
            lab = label_of(i)
            if lab is not None:
                pools[lab].append(i)
        k = self.per_class({lab: len(p) for lab, p in pools.items()}, len(labels))
        rows = []
        for c, lab in enumerate(labels):
            if prefer_short:
                chosen = _prefer_short(pools[lab], self.lengths, self.rng)[:k]
                chosen = [chosen[j] for j in self.rng.permutation(k)]
            else:
                chosen = [pools[lab][j] for j in self.rng.permutation(len(pools[lab]))[:k]]
            rows += [(self.snippets[i].source, c, s, self.snippets[i].id) for i, s in zip(chosen, _split_labels(k))]
        self.meta["n_long"] = sum(len(r[0]) > SHORT_CHARS for r in rows)
        return self.finish(labels, rows)

    def binary(self) -> Task:
        want = self.size // 2
        eligible: list[tuple[int, list, list]] = []
        for i in _prefer_short(self.ok, self.lengths, self.rng):
            toks = code_token_list(self.snippets[i].source)
            if not toks:
                continue
            sites = mutation_sites(self.name, self.snippets[i].source, toks, self.funcs[i])
            if sites:
                eligible.append((i, toks, sites))
                if len(eligible) == 2 * want:
                    break
        self.meta["eligible_functions"] = len(eligible)
        k = self.per_class({"correct": len(eligible) // 2, "mutated": len(eligible) // 2}, 2)
        rows = []
        for c, group in enumerate((eligible[0:2 * k:2], eligible[1:2 * k:2])):
            group = [group[j] for j in self.rng.permutation(k)]
            for (i, toks, sites), s in zip(group, _split_labels(k)):
                text = self.snippets[i].source
                if c:
                    mutated = mutate(self.name, text, self.rng, sites, toks)
                    assert mutated is not None  # sites is non-empty, so a mutation always exists
                    text = mutated
                rows.append((text, c, s, self.snippets[i].id))
        self.meta["n_long"] = sum(len(r[0]) > SHORT_CHARS for r in rows)
        return self.finish(_BINARY, rows)

    def ktx(self) -> Task:
        labels = tuple(KTX_CLASSES)
        pools: dict[str, dict[str, str]] = {tok: {} for tok in KTX_OF}  # token -> text -> snippet id
        for i in self.ok:
            src = self.snippets[i].source
            line_starts = [0] + [m.end() for m in re.finditer("\n", src)]
            for t in code_token_list(src) or ():
                if t.string in KTX_OF and t.kind in (tokenize.NAME, tokenize.OP):
                    text = src[line_starts[max(t.row - 1 - CONTEXT_LINES, 0)]:t.end]
                    pools[t.string].setdefault(text, self.snippets[i].id)
        want = self.size // len(labels)
        plans, available = {}, {}
        for cls in labels:
            toks = [t for t in KTX_CLASSES[cls] if pools[t]]
            if len(toks) < 3:
                raise InputError(f"task KTX: class {cls} has {len(toks)} distinct token(s) in the corpus {toks}, "
                                 "the split by token needs 3: use a bigger corpus such as 'stdlib'")
            plans[cls], available[cls] = self._token_split(toks, pools, want)
        k = self.per_class(available, len(labels))
        rows = []
        for c, cls in enumerate(labels):
            for split, n in zip(TASK_SPLITS, _split_sizes(k)):
                rows += [(text, c, split, sid) for text, sid in self._round_robin(plans[cls][split], pools, n)]
        self.meta["split_tokens"] = plans
        self.meta["notes"] = ["KTX is split by token identity: each class's tokens are assigned to tr/va/te, so "
                              "test tokens are never seen in training"]
        return self.finish(labels, rows)

    def _token_split(self, toks, pools, want: int, tries: int = 64):
        """Assign a class's tokens to tr/va/te (each at least one); among a few random shuffles keep the first
        that supplies ``want`` samples, else the one supplying most. Returns (plan, capacity)."""
        n = len(toks)
        n_va = max(1, int(round(n * 0.2)))
        best: tuple[dict[str, list] | None, int] = (None, -1)
        for _ in range(tries):
            order = [toks[j] for j in self.rng.permutation(n)]
            plan = {"tr": sorted(order[2 * n_va:]), "va": sorted(order[n_va:2 * n_va]), "te": sorted(order[:n_va])}
            occ = {s: sum(len(pools[t]) for t in plan[s]) for s in TASK_SPLITS}
            cap = next(k for k in range(want, -1, -1) if all(m <= occ[s] for s, m in zip(TASK_SPLITS, _split_sizes(k))))
            if cap > best[1]:
                best = (plan, cap)
            if cap >= want:
                break
        return best

    def _round_robin(self, toks, pools, n: int) -> list[tuple[str, str]]:
        """n distinct contexts, cycling over the tokens (each token's contexts in random order)."""
        queues = [[items[j] for j in self.rng.permutation(len(items))] for items in
                  (sorted(pools[t].items()) for t in [toks[j] for j in self.rng.permutation(len(toks))])]
        out: list[tuple[str, str]] = []
        while len(out) < n:
            for q in queues:
                if q and len(out) < n:
                    out.append(q.pop())
        return out

    def idn(self) -> Task:
        seen: dict[str, set[str]] = defaultdict(set)
        first: dict[str, str] = {}
        for i in self.ok:
            for kind, names in identifier_kinds(self.func(i)).items():
                for name in names:
                    seen[name].add(kind)
                    first.setdefault(name, self.snippets[i].id)
        pools = {k: sorted(n for n, ks in seen.items() if ks == {k}) for k in IDN_CLASSES}
        self.meta["ambiguous_identifiers"] = sum(len(ks) > 1 for ks in seen.values())
        k = self.per_class({c: len(p) for c, p in pools.items()}, len(IDN_CLASSES))
        rows = []
        for c, kind in enumerate(IDN_CLASSES):
            chosen = [pools[kind][j] for j in self.rng.permutation(len(pools[kind]))[:k]]
            rows += [(name, c, s, first[name]) for name, s in zip(chosen, _split_labels(k))]
        return self.finish(IDN_CLASSES, rows)


def _split_labels(k: int) -> list[str]:
    n_tr, n_va, n_te = _split_sizes(k)
    return ["tr"] * n_tr + ["va"] * n_va + ["te"] * n_te


def _bin(value: int, bins) -> str | None:
    return next((lab for lo, hi, lab in bins if lo <= value <= hi), None)


def _exact(value: int, lo: int, hi: int) -> str | None:
    return str(value) if lo <= value <= hi else None


def build_task(name: str, snippets: Sequence[Snippet], size: int = 1000, seed: int = 0, *,
               parsed: dict[int, _Function | None] | None = None) -> Task:
    """Build INSPECT task ``name`` from Python ``snippets``: balanced classes, 60/20/20 splits, deterministic.
    ``parsed`` (snippet index -> its function node, :func:`~probes.inspect.labels.function_node`) may be shared by
    builds over the same ``snippets`` (other tasks, glueCode's :func:`~probes.gluecode.build.build_items_from`):
    each snippet is then parsed once; the builds only read the nodes."""
    if name not in TASK_NAMES:
        raise InputError(f"unknown task {name!r}: valid names are {', '.join(TASK_NAMES)}")
    start = time.perf_counter()
    with gc_paused():  # the corpus's trees are alive throughout (probes.pyast)
        task = _build(_Builder(name, snippets, size, seed, {} if parsed is None else parsed))
    task.meta["build_seconds"] = round(time.perf_counter() - start, 3)
    return task


def _build(b: _Builder) -> Task:
    name, src = b.name, [s.source for s in b.snippets]
    if name == "KTX":
        task = b.ktx()
    elif name == "IDN":
        task = b.idn()
    elif name in ("TYP", "REA", "JBL", "SRI", "SRK", "SCK"):
        task = b.binary()
    elif name == "LEN":
        task = b.by_label([lab for _, _, lab in LEN_BINS], lambda i: _bin(code_tokens(src[i]), LEN_BINS), False)
    elif name == "OCU":
        task = b.by_label([str(v) for v in range(10)], lambda i: _exact(len(unique_operators(src[i])), 0, 9))
    elif name == "VCU":
        task = b.by_label([str(v) for v in range(1, 11)], lambda i: _exact(len(unique_variables(b.func(i))), 1, 10))
    elif name == "CSC":
        task = b.by_label([str(v) for v in range(10)], lambda i: _exact(code_structures(b.func(i)), 0, 9))
    elif name == "MXN":
        task = b.by_label(["1", "2", "3", "4", "5+"],
                          lambda i: str(min(max_depth(src[i], b.funcs[i]), 5)).replace("5", "5+"))
    elif name == "CPX":
        task = b.by_label([str(v) for v in range(10)], lambda i: _exact(decision_points(b.func(i)), 0, 9))
    else:
        task = b.by_label([lab for _, _, lab in NPT_BINS], lambda i: _bin(npath(b.func(i)), NPT_BINS))
    return task
