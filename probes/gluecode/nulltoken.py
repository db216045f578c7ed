"""NullToken items (glueCode section 2.4.5, appendix B.5): the token a static type checker flags as a possible
None dereference, or :data:`~probes.gluecode.items.NO_WARNING` for 20% negatives; exact match.

:func:`null_items` runs mypy over the corpus (:mod:`probes.gluecode.nullcheck`: the copy under another package
name, the warning set, the cache), maps each kept warning to the function that holds it and to one token, and
samples a seeded set. As in :mod:`probes.gluecode.build`: ids are ``NULL/<snippet id>``, ``module`` is the dotted
module and the split comes from the package (:meth:`~probes.gluecode.context.CorpusFiles.package_name` through
:func:`~probes.gluecode.items.split_of`), so no module is in both splits, or, where that leaves a split empty (a
one-package corpus), by file or top-level definition (:mod:`probes.gluecode.splits`); the file and call-graph texts
are :func:`~probes.gluecode.context.build_contexts`'s. Positives and negatives are drawn in a ``random.Random(seed)``
order; items come in corpus order. With fewer positives than 80% of ``size`` (the stdlib gives about 190), all
are kept and negatives are a quarter of them, so the share stays 20%.

**The token** is the name whose value may be None, read from the expression mypy points at with ``ast``: for
``m.group(0)`` it is ``m``; for ``self.conn.close()`` it is ``conn`` (the last name before the flagged ``.attr``);
for ``d[k].x`` it is ``d`` (the last name before ``[``); for ``re.match(p, s).group()`` it is ``match`` (the
called name); for ``x + 1``, ``-x``, ``k in x``, ``x()``, ``for y in x`` it is ``x``. An expression with no such
name (``(a or b).x``) is left out. mypy's column must hit the expression's start (UTF-8 bytes, or characters).

**Items.** One item per function (as :func:`asc.corpus.sources.load_corpus` extracts them: top-level functions and
methods, size-filtered, dedented) that holds exactly one warning *site*: the paper discarded methods with several
warnings; warnings at one expression (``with x:`` gives ``__enter__`` and ``__exit__``) count once. Negatives are
functions of the same corpus with no kept warning and no other diagnostic that names None (an ``X | None``
argument, say), so a negative is not a borderline case (:func:`classify_functions` sorts them, for the layer probe
:mod:`probes.gluecode.probing` too). ``candidates`` are the function's distinct identifier tokens in order (keywords
left out) plus ``NO_WARNING``; ``meta``: the checker's message and code, the token's ``line`` (1-based) and ``col``
(0-based characters) in the function, and its ``start``/``end`` offsets.

Departures from the paper: mypy instead of Infer, whose labels are path-sensitive and interprocedural; mypy's
are "the type checker warns here", not proven bugs (an attribute set to None in ``__init__`` is flagged at every
use). The paper's task does not mask anything; our item format needs a :data:`~probes.gluecode.items.MASK`,
so the function text ends with the line ``# possible None dereference at: <MASK>`` and the answer is generated
or ranked there. The file context is the whole file followed by ``# possible None dereference in
<Class.function> at: <MASK>`` (the call-graph context puts its stubs before that file). Nothing is masked: the
flagged token stays visible in every text, as in the paper.
"""

from __future__ import annotations

import ast
import keyword
import random
import time
import tokenize
import unicodedata
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from asc.confined import corpus_roots
from asc.corpus.sources import Snippet, check_line_range, load_corpus
from asc.errors import CorpusError, InputError
from probes.gluecode.callgraph import CorpusFiles, module_name
from probes.gluecode.context import build_contexts
from probes.gluecode.items import MASK, NO_WARNING, SPLITS, Item, split_of
from probes.gluecode.nullcheck import CHECKER, CheckResult, Diagnostic, NoneWarning, check_corpus, none_warning
from probes.gluecode.splits import finer_split, unit_at
from probes.pytokens import python_tokens

__all__ = ["FILE_PROMPT", "NEGATIVE_SHARE", "NULL_PROMPT", "CheckedFunction", "FileIndex", "Target",
           "classify_functions", "locate", "null_items", "null_items_from_check"]

NULL_PROMPT = "# possible None dereference at: "  # + MASK: the last line of every NULL item's function text
FILE_PROMPT = "# possible None dereference in {name} at: "  # + MASK: the last line of the file context
NEGATIVE_SHARE = 0.2  # the paper's share of "no warning" items
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
           ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&", ast.MatMult: "@"}
_CMPOPS = {ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
           ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
_UNOPS = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}
_REFLECT = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}


@dataclass(frozen=True)
class Target:
    """The flagged token in its file: 1-based line, 0-based character column, the name."""

    line: int
    col: int
    name: str


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning of old escapes
        return ast.parse(text)


class FileIndex:
    """The ``ast`` nodes of one file that a warning can point at, and mypy's span tests against them."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.tree = _parse(text)
        self.nodes = [n for n in ast.walk(self.tree) if isinstance(n, (ast.expr, ast.AugAssign, ast.Delete))]  # outer first

    def _byte(self, line: int, col: int) -> int:  # a character column as UTF-8 bytes
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text[:col].encode("utf-8"))

    def char(self, line: int, byte: int) -> int:
        """A UTF-8 byte column (``ast``'s) as a character column."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return len(text.encode("utf-8")[:byte].decode("utf-8", "ignore"))

    def _spans(self, d: Diagnostic) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """mypy's span read as UTF-8 bytes (``--no-native-parser``) and as characters."""
        return [((d.line, d.column), (d.end_line, d.end_column)),
                ((d.line, self._byte(d.line, d.column)), (d.end_line, self._byte(d.end_line, d.end_column)))]

    def starts(self, node: ast.AST, d: Diagnostic) -> bool:
        return any((node.lineno, node.col_offset) == s for s, _ in self._spans(d))  # type: ignore[attr-defined]

    def exact(self, node: ast.AST, d: Diagnostic) -> bool:
        return any(((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)) == span  # type: ignore[attr-defined]
                   for span in self._spans(d))

    def inside(self, node: ast.AST, d: Diagnostic) -> bool:
        start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return any(s <= start and end <= e for s, e in self._spans(d))

    def on_line(self, d: Diagnostic, kind: type | tuple[type, ...]) -> list[Any]:
        return [n for n in self.nodes if isinstance(n, kind) and n.lineno <= d.line <= (n.end_lineno or n.lineno)]


def _head(node: ast.AST) -> tuple[int, int, str] | None:
    """(line, byte column, name) of the name whose value the expression is, per the module doc."""
    if isinstance(node, ast.Name):
        return node.lineno, node.col_offset, node.id
    if isinstance(node, ast.Attribute) and node.end_lineno is not None and node.end_col_offset is not None:
        return node.end_lineno, node.end_col_offset - len(node.attr.encode("utf-8")), node.attr
    if isinstance(node, ast.Call):
        return _head(node.func)
    if isinstance(node, (ast.Subscript, ast.Starred, ast.Await)):
        return _head(node.value)
    if isinstance(node, ast.NamedExpr):
        return _head(node.target)
    return None


def _one(nodes: list[Any], index: FileIndex, d: Diagnostic) -> Any:
    """The node mypy points at: the only one, else the only one whose span is mypy's; else None (ambiguous)."""
    if len(nodes) > 1:
        nodes = [n for n in nodes if index.exact(n, d)]
    return nodes[0] if len(nodes) == 1 else None


def _operands(n: ast.AST, op: str) -> tuple[ast.AST, ast.AST, bool] | None:
    """(left, right, reflected) of an operator node whose operator is mypy's ``op`` (or its mirror image)."""
    if isinstance(n, ast.BinOp) and _BINOPS.get(type(n.op)) == op:
        return n.left, n.right, False
    if isinstance(n, ast.AugAssign) and _BINOPS.get(type(n.op)) == op:
        return n.target, n.value, False
    if isinstance(n, ast.UnaryOp) and _UNOPS.get(type(n.op)) == op:
        return n.operand, n.operand, False
    if isinstance(n, ast.Compare):
        operands = [n.left, *n.comparators]
        for i, cmp in enumerate(n.ops):
            sym = {"not in": "in"}.get(_CMPOPS[type(cmp)], _CMPOPS[type(cmp)])
            if op in (sym, _REFLECT.get(sym)):
                return operands[i], operands[i + 1], sym != op
    return None


def _op_operand(w: NoneWarning, index: FileIndex) -> ast.AST | None:
    """The maybe-None operand. mypy points at the operator expression, at a part of it or at one operand; the
    candidates whose whole span is mypy's come first, then those that start where mypy points, then those with
    an operand there; within a tier, operands with no name are dropped, and two left mean ambiguous
    (``a + b + c`` when ``b`` or ``c`` may be None: both sums start at ``a``)."""
    d, hinted = w.diagnostic, (w.diagnostic.hint or "").startswith(("Left operand", "Right operand"))
    found = []
    for n in index.on_line(d, (ast.BinOp, ast.AugAssign, ast.UnaryOp, ast.Compare)):
        ops = _operands(n, w.op)
        if ops is not None:
            left, right, reflected = ops
            side = {"left": "right", "right": "left"}.get(w.side, w.side) if reflected and not hinted else w.side
            found.append((n, ops, right if side == "right" else left))
    tiers = ([f for f in found if index.exact(f[0], d)], [f for f in found if index.starts(f[0], d)],
             [f for f in found if index.starts(f[1][0], d) or index.starts(f[1][1], d)])
    for tier in tiers:
        if len(tier) > 1:
            tier = [f for f in tier if _head(f[2]) is not None]
        if tier:
            return tier[0][2] if len(tier) == 1 else None
    return None


def locate(w: NoneWarning, index: FileIndex) -> Target | None:
    """The flagged token of a kept warning in its file (see the module doc), or None when it cannot be found."""
    d = w.diagnostic
    value: ast.AST | None = None
    if w.kind == "attr":
        attrs = [n for n in index.on_line(d, ast.Attribute) if n.attr == w.attr]
        node = _one([n for n in attrs if index.starts(n, d)], index, d) or _one(
            [n for n in attrs if index.inside(n, d)], index, d)  # inside: an f-string's part
        if node is not None:
            value = node.value
        elif w.attr == "__delitem__":  # `del x[k]`: mypy points at the statement
            subs = [t for n in index.on_line(d, ast.Delete) if index.starts(n, d) for t in n.targets
                    if isinstance(t, ast.Subscript)]
            value = subs[0].value if len(subs) == 1 else None
        elif not attrs:  # an implicit dunder (__iter__ of a for, __enter__ of a with): the expression itself
            value = next((n for n in index.on_line(d, ast.expr) if index.exact(n, d)), None)
    elif w.kind == "index":
        node = _one([n for n in index.on_line(d, ast.Subscript) if index.starts(n, d)], index, d)
        value = node.value if node is not None else None
    elif w.kind == "call":
        node = _one([n for n in index.on_line(d, ast.Call) if index.starts(n, d)], index, d)
        value = node.func if node is not None else None
    elif w.kind == "iter":
        value = next((n for n in index.on_line(d, ast.expr) if index.exact(n, d)), None)
    elif w.kind == "operator":
        value = _op_operand(w, index)
    head = _head(value) if value is not None else None
    if head is None:
        return None
    line, byte, name = head
    return Target(line, index.char(line, byte), name)


@dataclass
class CheckedFunction:
    """A corpus function mypy checked: its kept warning sites (:func:`classify_functions`)."""

    snippet: Snippet
    sites: dict[Any, NoneWarning]  # located token (or mypy position) -> its first warning
    targets: dict[Any, Target | None]
    names_none: bool = False  # another diagnostic in it mentions None


def _token(snip: Snippet, file_lines: list[str], target: Target) -> tuple[int, int, int, int, str] | None:
    """(line, col, start, end, text) of the target's token in the dedented function, checked against the file."""
    src_lines = snip.source.split("\n")
    row = target.line - snip.line + 1
    if not 1 <= row <= len(src_lines) or target.line > len(file_lines):
        return None
    margin = len(file_lines[snip.line - 1]) - len(src_lines[0])  # what dedenting removed
    if margin < 0 or file_lines[target.line - 1][margin:].rstrip() != src_lines[row - 1].rstrip():
        return None
    col = target.col - margin
    try:
        tokens = python_tokens(snip.source)
    except (tokenize.TokenError, SyntaxError):
        return None
    for tok in tokens:
        if tok.row == row and tok.col == col and tok.kind == tokenize.NAME:
            return (row, col, tok.start, tok.end, tok.string) if (
                unicodedata.normalize("NFKC", tok.string) == target.name) else None
    return None


def classify_functions(result: CheckResult, snippets: Sequence[Snippet]
                       ) -> tuple[list[CheckedFunction], dict[str, str], Counter[str]]:
    """The checked files' Python functions (``origin`` relative to ``result.base``) with their kept warning sites
    and whether another diagnostic in them names None; the texts of the files with a kept warning; counts."""
    checked = set(result.files)
    by_file: dict[str, list[Snippet]] = {}
    for snip in (s for s in snippets if s.language == "python" and s.origin in checked):
        by_file.setdefault(snip.origin, []).append(snip)
    diags: dict[str, list[Diagnostic]] = {}
    for d in (d for d in result.diagnostics if d.severity == "error"):
        diags.setdefault(d.file, []).append(d)
    stats: Counter[str] = Counter()
    functions: list[CheckedFunction] = []
    texts: dict[str, str] = {}
    for origin, snips in by_file.items():
        fns = [CheckedFunction(s, {}, {}) for s in snips]
        file_diags = diags.get(origin, [])
        if any(none_warning(d) for d in file_diags) and origin in result.texts:
            try:  # the bytes mypy checked, read once by check_corpus (never the path again)
                texts[origin] = result.texts[origin].decode("utf-8")
            except UnicodeDecodeError:
                pass  # a file with another coding cookie: its warnings keep mypy's own columns
        index = FileIndex(texts[origin]) if origin in texts else None
        for d in file_diags:
            fn = next((f for f in fns if f.snippet.line <= d.line < f.snippet.line + f.snippet.n_lines), None)
            if fn is None:
                continue
            if (w := none_warning(d)) is None:
                fn.names_none |= '"None"' in d.message or "| None" in d.message
                continue
            stats["warnings in the functions"] += 1
            target = locate(w, index) if index is not None else None
            site = (target.line, target.col) if target else (d.line, d.column, d.end_line, d.end_column)
            fn.sites.setdefault(site, w)
            fn.targets.setdefault(site, target)
        functions.extend(fns)
    return functions, texts, stats


def null_items_from_check(result: CheckResult, snippets: Sequence[Snippet], files: CorpusFiles, size: int = 1000,
                          seed: int = 0, contexts: bool = True) -> tuple[list[Item], dict]:
    """NullToken items from mypy's diagnostics (:func:`~probes.gluecode.nullcheck.check_corpus`) and the corpus's
    functions (``origin`` relative to ``result.base``, which ``files`` reads); returns the items and the counts
    of every filter."""
    if size < 1:
        raise InputError(f"size must be at least 1 (got {size}); the paper's sets hold 1,000 items")
    functions, texts, stats = classify_functions(result, snippets)
    kinds: Counter[str] = Counter(w.kind for d in result.diagnostics if (w := none_warning(d)))
    positives: list[tuple[CheckedFunction, tuple[int, int, int, int, str]]] = []
    negatives: list[CheckedFunction] = []
    for fn in functions:
        if len(fn.sites) > 1:
            stats["functions with several warnings (discarded)"] += 1
        elif fn.sites:
            target = next(iter(fn.targets.values()))
            tok = _token(fn.snippet, texts[fn.snippet.origin].split("\n"), target) if target else None
            if tok is None:
                stats["warnings not mapped to a token (discarded)"] += 1
            else:
                positives.append((fn, tok))
        elif fn.names_none:
            stats["functions with a None-related diagnostic outside the set (not negatives)"] += 1
        else:
            negatives.append(fn)
    if not positives:
        raise CorpusError("no function of this corpus has exactly one possible None dereference that mypy flags: "
                          "give a larger corpus (stdlib, algorithms or a bigger folder)")
    rng = random.Random(seed)
    rng.shuffle(positives)
    rng.shuffle(negatives)
    n_pos_want = size - round(size * NEGATIVE_SHARE)
    pos_items = _take([(f, t) for f, t in positives], n_pos_want, files, contexts, stats)
    n_neg = round(size * NEGATIVE_SHARE) if len(pos_items) == n_pos_want else round(
        len(pos_items) * NEGATIVE_SHARE / (1 - NEGATIVE_SHARE))  # too few positives: keep the paper's 20% share
    items = _split_finer(pos_items + _take([(f, None) for f in negatives], n_neg, files, contexts, stats), files,
                         seed, stats)
    order = {id(f.snippet): i for i, f in enumerate(functions)}
    items.sort(key=lambda pair: order[id(pair[0])])
    stats["warnings outside the functions (module level, or a function the size filter drops)"] = (
        sum(kinds.values()) - stats["warnings in the functions"])
    counts = {"warnings": sum(kinds.values()), "warnings_by_kind": dict(sorted(kinds.items())),
              "functions": len(functions), "positives_available": len(positives), "negatives_available": len(negatives),
              "positives": len(pos_items), "negatives": len(items) - len(pos_items), **stats}
    return [it for _, it in items], counts


def _split_finer(pairs: list[tuple[Snippet, Item]], files: CorpusFiles, seed: int,
                 stats: Counter[str]) -> list[tuple[Snippet, Item]]:
    """The items as split by package, or, when that leaves a split empty (a one-package corpus), by file or by
    top-level definition (:mod:`probes.gluecode.splits`: stratified on warning / no warning), whichever gives the
    larger smaller split (then by file); a :class:`CorpusError` when neither gives both splits."""
    if len({it.split for _, it in pairs}) > 1:
        return pairs
    kinds = [("warning",) if it.label != NO_WARNING else (NO_WARNING,) for _, it in pairs]
    level, units, splits = finer_split(
        "NULL", seed, len(pairs), lambda level, i: unit_at(level, files, pairs[i][1].meta["package"], pairs[i][0].origin,
                                                           pairs[i][0].line, pairs[i][0].name),
        kinds, ("warning", NO_WARNING), lambda splits: (min(splits.count(s) for s in SPLITS),))
    smaller = min(splits.count(s) for s in SPLITS)
    if not smaller:
        raise CorpusError(f"task NULL: the corpus is too small for a dev and a test split: {len(pairs)} items in "
                          f"{len({s.origin for s, _ in pairs})} files; both splits need items from at least 2 "
                          "top-level definitions; give a bigger folder")
    stats[f"items split by {level} (one package)"] = len(pairs)
    return [(snip, replace(it, split=split, meta={**it.meta, "split_by": level, "unit": unit}))
            for (snip, it), unit, split in zip(pairs, units, splits)]


def _take(pool: list[tuple[CheckedFunction, tuple[int, int, int, int, str] | None]], n: int, files: CorpusFiles,
          contexts: bool, stats: Counter[str]) -> list[tuple[Snippet, Item]]:
    """Items of the first ``n`` functions of ``pool`` whose contexts can be built (see :func:`_item`)."""
    out: list[tuple[Snippet, Item]] = []
    for fn, tok in pool:
        if len(out) >= n:
            break
        if (item := _item(fn, tok, files, contexts)) is None:
            stats["functions that do not tokenize or whose file context cannot be built (skipped)"] += 1
        else:
            out.append((fn.snippet, item))
    return out


def _item(fn: CheckedFunction, tok: tuple[int, int, int, int, str] | None, files: CorpusFiles,
          contexts: bool) -> Item | None:
    snip = fn.snippet
    unit = files.package_name(snip.origin)  # the split unit of the other tasks (probes.gluecode.build)
    meta: dict[str, Any] = {"snippet": snip.id, "package": unit, "file_line": snip.line, "name": snip.name}
    label = NO_WARNING
    if tok is not None:
        w = next(iter(fn.sites.values()))
        line, col, start, end, label = tok
        meta |= {"message": w.diagnostic.message, "code": w.diagnostic.code, "kind": w.kind, "line": line,
                 "col": col, "start": start, "end": end, "checker": CHECKER}
    try:  # the function's distinct identifier tokens, keywords left out
        candidates = tuple(dict.fromkeys(t.string for t in python_tokens(snip.source) if t.kind == tokenize.NAME
                                         and not keyword.iskeyword(t.string))) + (NO_WARNING,)
    except (tokenize.TokenError, SyntaxError):
        return None
    file_text = callgraph = ""
    if contexts:
        ctx = build_contexts(snip.source, snip.origin, snip.line, files)
        info = files.module(snip.origin)
        if ctx is None or info is None:
            return None
        where = next((f"{d.cls}.{d.name}" if d.cls else d.name for d in info.definitions
                      if d.line == snip.line and d.kind == "function"), snip.name)
        file_text = f"{ctx.file.rstrip()}\n\n{FILE_PROMPT.format(name=where)}{MASK}\n"
        callgraph = ctx.callgraph
    return Item(task="NULL", id=f"NULL/{snip.id}", split=split_of(unit), module=files.prefix + module_name(snip.origin),
                function=f"{snip.source}{NULL_PROMPT}{MASK}\n", label=label, candidates=candidates,
                file=file_text, callgraph=callgraph, meta=meta)


def null_items(corpus_spec: str, size: int = 1000, seed: int = 0, workdir: str | Path | None = None, *,
               roots: Sequence[Path] | None = None, min_lines: int | None = None, max_lines: int | None = None,
               contexts: bool = True) -> tuple[list[Item], dict]:
    """A seeded NullToken set of up to ``size`` items (20% ``NO_WARNING``) from a corpus (``stdlib``,
    ``algorithms``, a folder or a ``.py`` file) and its provenance: the checker, its version and flags, the files
    checked and skipped, mypy's wall time (and whether it came from the cache), the warnings found and kept.
    mypy's output is cached under ``workdir`` (default: the app's cache folder). ``contexts``: build the file and
    call-graph texts (:func:`probes.gluecode.context.build_contexts`)."""
    start = time.perf_counter()
    check_line_range(min_lines, max_lines)  # before mypy runs
    result = check_corpus(corpus_spec, workdir, roots)
    snippets = load_corpus(corpus_spec, min_lines=min_lines, max_lines=max_lines, roots=roots)
    items, counts = null_items_from_check(result, snippets, CorpusFiles(result.base, corpus_roots(corpus_spec, roots)),
                                            size, seed, contexts)
    provenance = {"task": "NULL", "corpus": corpus_spec, "size": size, "seed": seed, "contexts": contexts,
                  "n_items": len(items), "per_split": {s: sum(it.split == s for it in items) for s in SPLITS},
                  "split_by": items[0].meta.get("split_by", "package") if items else "package",
                  "checker": CHECKER, "checker_version": result.mypy, "flags": list(result.flags),
                  "copied_as": result.package or None, "files_checked": len(result.files),
                  "files_skipped": len(result.skipped), "skipped": dict(list(result.skipped.items())[:20]),
                  "mypy_seconds": round(result.seconds, 2), "cached": result.cached,
                  "diagnostics": len(result.diagnostics), **counts, "seconds": round(time.perf_counter() - start, 2),
                  "labels": "the type checker warns here (mypy), not proven bugs"}
    return items, provenance
