"""Attributions per statement (each token counted once), per node's own tokens, and where methods agree.

A node's attribution (:mod:`asc.why.attribute`) sums every token bound to it, so an ancestor holds all of its
descendants' tokens: ``function_definition`` and ``block`` lead any ranking by size, and the nodes' shares add up
to more than 1. This module **partitions** the prompt's attributed tokens instead, so that an ancestor does not win
by containing everything:

:func:`by_statement` (rows: statements; the inspector's default view)
    each token goes to the innermost statement that holds it. Statements are the nodes :func:`is_statement`
    accepts: simple and compound statements, definitions and declarations, the clauses of a compound statement
    (``elif``, ``else``, ``except``, ``finally``, ``case``, ``catch``), decorators and comments. A compound
    statement's row is therefore its header (``def f(x):``, ``for x in xs:``): its body's tokens go to the
    statements inside it. A token's place is its first visible character; a whitespace-only token
    (``"\\n    "``) goes to the line it ends (the statement holding the character before it). Tokens in no
    statement make one row of their own (kind ``"outside"``, node -1).
:func:`by_own_tokens` (rows: named nodes)
    each token goes to the deepest named node it is bound to (:mod:`asc.align`; at equal depth, the first):
    a node's own tokens, those not inside a named child (``def`` and ``:`` of a function definition, the
    operator of a binary operation).

Values. Gradient x input and integrated gradients: a row's value is the sum of its tokens' attributions (with
integrated gradients the rows then add up to the attributions' total, value - baseline value up to the
completeness gap). Occlusion has no per-token values: a statement row's value is the statement's own occlusion
(the statement replaced, e.g. by ``pass``) when it holds no other statement, else the sum of the occlusions of its
header's parts (its named children that hold no statement: a definition's name and parameters, a loop's target and
iterable, a condition); these add up to nothing in particular. :func:`by_own_tokens` needs per-token values (not
occlusion). In every case a row's **share** is ``|value|`` over the sum of the rows' ``|value|``: shares add up to
1 (NaN rows left out).

The target's own line. The statement holding the target keeps a row of its own (its tokens before the target:
``return`` before a returned name, ``x ==`` before a literal), :attr:`Breakdown.target_row`. That context is
next to every prediction, and occlusion cannot remove it validly (the edit would change the target too: its tokens
are blanked instead, a harsher removal), so it tops most rankings whatever the earlier code says.
:func:`summary` and :func:`agreement` therefore name it apart and rank the other statements; its row still counts
in the shares.

:func:`summary` says the top rows in words; :func:`agreement` puts several methods' statement views side by side:
each method's rows other than the target's line ranked by ``|value|``, and Spearman's rank correlation of those
statements' signed values for each pair of methods, over the statements both give a value (NaN for fewer than 3,
or when one is constant).

Known answers (``tests/asc/why/test_known_answers.py``): on six small functions whose target is a name (or a
literal) defined once above, the statement occlusion ranks first (the target's line apart) is the defining one,
with a positive value, on five; gradient x input and integrated gradients do not (the method notes of docs/why.md
give the counts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from asc.errors import InputError
from asc.explain import Explanation
from asc.syntax import SyntaxTree
from asc.why.attribute import Attribution

__all__ = ["Agreement", "Breakdown", "STATEMENT_TYPES", "agreement", "by_own_tokens", "by_statement",
           "is_statement", "row_name", "statement_nodes", "summary"]

#: statement-level node types beyond the ``*_statement``, ``*_declaration`` and ``*_definition`` ones (Python and
#: Java): a compound statement's clauses, decorators, switch labels and comments
STATEMENT_TYPES = frozenset({"elif_clause", "else_clause", "except_clause", "except_group_clause", "finally_clause",
                             "case_clause", "catch_clause", "switch_label", "decorator", "comment", "line_comment",
                             "block_comment"})
_SUFFIXES = ("_statement", "_declaration", "_definition")
_DOC_PARENTS = ("function_definition", "class_definition")
_TEXT = 400  # characters of a row's code kept (the rest shown as " …")


def is_statement(type_name: str) -> bool:
    """Whether nodes of ``type_name`` are rows of :func:`by_statement` (module doc)."""
    return type_name.endswith(_SUFFIXES) or type_name in STATEMENT_TYPES


def statement_nodes(tree: SyntaxTree) -> np.ndarray:
    """int64 (S,): the statement nodes of ``tree`` (named, :func:`is_statement`), in source order."""
    return np.array([i for i in range(tree.n_nodes) if tree.named[i] and is_statement(tree.type[i])], dtype=np.int64)


@dataclass(frozen=True)
class Breakdown:
    """One attribution's prompt tokens partitioned into rows (module doc), rows in source order.

    ``node`` int64 (R,): the row's node (-1: tokens outside every statement); ``kind`` (R,): the node's type, or
    ``"docstring"``, ``"outside"``; ``line``/``last_line`` int64 (R,): the first and last line (1-based) of the
    row's tokens; ``text`` (R,): the row's code, its tokens' text in order (a gap between them shown as " … ");
    ``value`` float64 (R,) signed (NaN: none); ``share`` float64 (R,): ``|value|`` over the rows' sum (adds up to
    1); ``n_tokens`` int64 (R,): the row's attributed tokens; ``token_row`` int64 (T,): each token's row (-1: not
    attributed: special, the target and after, a held token); ``target_row``: the row where the target's first
    token lies (-1: none, e.g. the target's line starts at the target). ``unit`` is ``"statement"`` or
    ``"node"``; ``additive``: values are sums of token attributions (not occlusion)."""

    method: str
    unit: str
    source: str
    node: np.ndarray
    kind: tuple[str, ...]
    line: np.ndarray
    last_line: np.ndarray
    text: tuple[str, ...]
    value: np.ndarray
    share: np.ndarray
    n_tokens: np.ndarray
    token_row: np.ndarray
    target_row: int
    additive: bool

    @property
    def n_rows(self) -> int:
        return len(self.node)

    def ranked(self, k: int | None = None, target_line: bool = True) -> list[int]:
        """Row indices by ``|value|``, largest first (NaN rows last; ties in source order), the first ``k``;
        without the target's line (:attr:`target_row`) when ``target_line`` is false (module doc)."""
        key = np.where(np.isnan(self.value), -1.0, np.abs(np.nan_to_num(self.value)))
        order = sorted((r for r in range(self.n_rows) if target_line or r != self.target_row),
                       key=lambda r: (-key[r], r))
        return order if k is None else order[:k]

    def to_dict(self) -> dict:
        """Plain JSON-ready rows (None for NaN), ranked."""
        return {"method": self.method, "unit": self.unit, "rows": [
            {"node": int(self.node[r]), "kind": self.kind[r], "line": int(self.line[r]),
             "last_line": int(self.last_line[r]), "text": self.text[r], "value": _num(self.value[r]),
             "share": _num(self.share[r]), "tokens": int(self.n_tokens[r]), "target_line": r == self.target_row}
            for r in self.ranked()], "target_line": self.target_row}


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _attributed(attr: Attribution) -> np.ndarray:
    """bool (T,): the tokens with an attribution (occlusion: the prompt's non-special tokens)."""
    s = attr.explanation.scores
    if attr.method == "occlusion":
        return ~s.special & (np.arange(s.n_tokens) < attr.target.index)
    return ~np.isnan(np.asarray(attr.token_attr, dtype=np.float64))


def _places(ex: Explanation) -> np.ndarray:
    """int64 (T,): each token's place (module doc): its first visible character, or for a whitespace-only token
    the last visible character before it (the first one after it at the snippet's start); -1 for a token with no
    text (special) or only whitespace around it."""
    s, src = ex.scores, ex.source
    visible = np.array([not c.isspace() for c in src], dtype=bool)
    idx = np.arange(len(src))
    last_before = np.maximum.accumulate(np.where(visible, idx, -1)) if len(src) else idx  # at or before i
    out = np.full(s.n_tokens, -1, dtype=np.int64)
    for i in range(s.n_tokens):
        a, b = int(s.start[i]), int(s.end[i])
        if b <= a:
            continue
        inside = np.flatnonzero(visible[a:b])
        if len(inside):
            out[i] = a + int(inside[0])
        elif a > 0 and last_before[a - 1] >= 0:
            out[i] = int(last_before[a - 1])
        else:
            after = np.flatnonzero(visible[b:])
            out[i] = b + int(after[0]) if len(after) else -1
    return out


def _innermost(tree: SyntaxTree, nodes: np.ndarray, places: np.ndarray) -> np.ndarray:
    """int64 (T,): for each place, the deepest of ``nodes`` whose span holds it (-1: none, or no place)."""
    if not len(nodes):
        return np.full(len(places), -1, dtype=np.int64)
    holds = (tree.start[nodes][None, :] <= places[:, None]) & (places[:, None] < tree.end[nodes][None, :])
    depth = np.where(holds, tree.depth[nodes][None, :], -1)
    best = np.argmax(depth, axis=1)
    return np.where(holds.any(axis=1) & (places >= 0), nodes[best], -1).astype(np.int64)


def _is_docstring(tree: SyntaxTree, node: int) -> bool:
    """A bare string statement first in a module, or in the body of a function or class."""
    if tree.type[node] != "expression_statement":
        return False
    kids = [int(c) for c in tree.children(node) if tree.named[c]]
    if len(kids) != 1 or tree.type[kids[0]] not in ("string", "concatenated_string"):
        return False
    parent = int(tree.parent[node])
    if parent < 0:
        return False
    first = next((int(c) for c in tree.children(parent) if tree.named[c] and tree.type[c] != "comment"), None)
    up = int(tree.parent[parent])
    return first == node and (tree.type[parent] == "module" or (tree.type[parent] == "block" and up >= 0
                                                                 and tree.type[up] in _DOC_PARENTS))


def _code(ex: Explanation, tokens: np.ndarray) -> str:
    """The text of ``tokens`` (sorted indices) in order, a gap between two of them shown as " … ", stripped."""
    s, src = ex.scores, ex.source
    parts: list[str] = []
    end = -1
    for i in tokens.tolist():
        a, b = int(s.start[i]), int(s.end[i])
        if parts and a > end:
            parts.append(" … ")
        parts.append(src[max(a, end):b] if parts else src[a:b])
        end = max(end, b)
    pieces = [src[int(s.start[i]):int(s.end[i])] for i in tokens.tolist()]
    if not "".join(pieces).strip():  # only whitespace (a block's own tokens): as it is, without gaps
        return "".join(pieces)
    text = "".join(parts).strip()
    return text if len(text) <= _TEXT else text[: _TEXT - 1] + "…"


def _line_of(source: str, offsets: np.ndarray) -> np.ndarray:
    starts = np.array([0] + [i + 1 for i, c in enumerate(source) if c == "\n"], dtype=np.int64)
    return np.searchsorted(starts, offsets, side="right").astype(np.int64)


def _rows(attr: Attribution, owner: np.ndarray, unit: str, values: dict[int, float] | None) -> Breakdown:
    """The :class:`Breakdown` of the partition ``owner`` (T,) (node per token, -1: outside; only attributed tokens
    count); ``values``: the rows' values when they are not sums of token attributions (occlusion)."""
    ex = attr.explanation
    s, tree = ex.scores, ex.tree
    attributed = _attributed(attr)
    keys = sorted({int(owner[i]) for i in np.flatnonzero(attributed)},
                  key=lambda n: (int(tree.start[n]) if n >= 0 else -1, -int(tree.depth[n]) if n >= 0 else 0))
    row_of = {n: r for r, n in enumerate(keys)}
    token_row = np.array([row_of[int(owner[i])] if attributed[i] else -1 for i in range(s.n_tokens)], dtype=np.int64)
    clean = np.where(attributed, np.nan_to_num(np.asarray(attr.token_attr, dtype=np.float64)), 0.0)
    has = attributed & ~np.isnan(np.asarray(attr.token_attr, dtype=np.float64))
    places = _places(ex)
    value = np.full(len(keys), np.nan)
    n_tokens = np.zeros(len(keys), dtype=np.int64)
    text, kind, first, last = [], [], [], []
    for r, n in enumerate(keys):
        mine = np.flatnonzero(token_row == r)
        n_tokens[r] = len(mine)
        if values is not None:
            value[r] = values.get(n, math.nan)
        elif has[mine].any():
            value[r] = float(clean[mine].sum())
        text.append(_code(ex, mine))
        kind.append("outside" if n < 0 else "docstring" if _is_docstring(tree, n) else tree.type[n])
        first.append(int(places[mine].min()))
        last.append(int(places[mine].max()))
    total = float(np.nansum(np.abs(value)))
    share = np.abs(value) / total if total > 0 else np.full(len(keys), np.nan)
    target_owner = int(owner[attr.target.index]) if places[attr.target.index] >= 0 else -2
    return Breakdown(method=attr.method, unit=unit, source=ex.source, node=np.array(keys, dtype=np.int64),
                     kind=tuple(kind), line=_line_of(ex.source, np.array(first, dtype=np.int64)),
                     last_line=_line_of(ex.source, np.array(last, dtype=np.int64)), text=tuple(text), value=value,
                     share=share, n_tokens=n_tokens, token_row=token_row, target_row=row_of.get(target_owner, -1),
                     additive=values is None)


def _occlusion_values(attr: Attribution, statements: np.ndarray) -> dict[int, float]:
    """Each statement's occlusion value (module doc): its own, or the sum of its header parts'."""
    tree = attr.explanation.tree
    is_stmt = np.zeros(tree.n_nodes, dtype=bool)
    is_stmt[statements] = True
    above = np.zeros(tree.n_nodes, dtype=bool)  # holds a statement strictly inside it
    for n in statements.tolist():
        p = int(tree.parent[n])
        while p >= 0 and not above[p]:
            above[p] = True
            p = int(tree.parent[p])
    out: dict[int, float] = {}
    node_attr = np.asarray(attr.node_attr, dtype=np.float64)
    for n in statements.tolist():
        if not above[n]:
            out[n] = float(node_attr[n])
            continue
        parts = [float(node_attr[c]) for c in tree.children(n).tolist()
                 if tree.named[c] and not above[c] and not is_stmt[c] and not math.isnan(node_attr[c])]
        out[n] = float(sum(parts)) if parts else math.nan
    return out


def by_statement(attr: Attribution) -> Breakdown:
    """``attr``'s prompt tokens per innermost statement (module doc): rows that partition the attributed tokens,
    shares adding up to 1."""
    ex = attr.explanation
    statements = statement_nodes(ex.tree)
    owner = _innermost(ex.tree, statements, _places(ex))
    values = _occlusion_values(attr, statements) if attr.method == "occlusion" else None
    return _rows(attr, owner, "statement", values)


def by_own_tokens(attr: Attribution) -> Breakdown:
    """``attr``'s prompt tokens per deepest named node they are bound to (module doc): each node's own tokens.
    Occlusion (no per-token values) is an :class:`~asc.errors.InputError`."""
    if attr.method == "occlusion":
        raise InputError("occlusion has no per-token values to split among nodes: use by_statement, or the "
                         "nested node values (Attribution.node_attr)")
    ex = attr.explanation
    tree, al = ex.tree, ex.alignment
    owner = np.full(ex.scores.n_tokens, -1, dtype=np.int64)
    named = [i for i in range(tree.n_nodes) if tree.named[i]]
    for n in sorted(named, key=lambda i: (int(tree.depth[i]), -i)):  # deeper last; at one depth, the first last
        owner[al.tokens_of(n)] = n
    return _rows(attr, owner, "node", None)


def row_name(view: Breakdown, r: int, chars: int = 40) -> str:
    """Row ``r`` in words, for a sentence: "line 3 `total = sum(poids)`", "the docstring (line 2)", "the comment
    on line 5", "code outside every statement"; a node row adds its type. Markdown: code in backticks."""
    kind, line = view.kind[r], int(view.line[r])
    flat = " ".join(view.text[r].split()).replace("`", "'") or "whitespace"
    cut = flat if len(flat) <= chars else flat[: chars - 1] + "…"
    where = f"line {line}" if view.last_line[r] == line else f"lines {line}-{int(view.last_line[r])}"
    if kind == "outside":
        return "code outside every statement"
    if kind == "docstring":
        return f"the docstring ({where})"
    if kind in ("comment", "line_comment", "block_comment"):
        return f"the comment on {where}"
    return f"`{cut}` ({kind}, {where})" if view.unit == "node" else f"{where} `{cut}`"


def summary(view: Breakdown, k: int = 2) -> str:
    """One sentence naming the ``k`` rows with the largest ``|value|`` and their signed values, the target's own
    line apart (module doc): "Besides its own line (line 4, before the target: +17.2), the prediction relied most
    on line 3 `total = sum(poids)` (+6.26) and the docstring (line 2) (-0.12)." Markdown."""
    top = [r for r in view.ranked(k, target_line=False) if not math.isnan(view.value[r])]
    own = view.target_row
    besides = (f"Besides its own line (line {int(view.line[own])}, before the target: {view.value[own]:+.3g}), the "
               if own >= 0 and not math.isnan(view.value[own]) else "The ")
    if not top:
        return besides + f"prediction has no other {view.unit} with an attribution."
    named = [f"{row_name(view, r)} ({view.value[r]:+.3g})" for r in top]
    said = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return f"{besides}prediction relied most on {said}."


@dataclass(frozen=True)
class Agreement:
    """Several methods' statement views side by side (module doc). ``methods`` (M,); rows (R,), the union of the
    methods' rows other than the target's line, in source order: ``node``, ``line``, ``text``, ``kind``; ``value`` float64 (M, R) (NaN: the
    method gives the row no value); ``rank`` float64 (M, R): 1 for the largest ``|value|`` of that method (NaN: no
    value); ``spearman`` float64 (M, M): rank correlation of the signed values over the rows both methods give a
    value (NaN: fewer than 3, or one constant); ``n_common`` int64 (M, M): those rows."""

    methods: tuple[str, ...]
    node: np.ndarray
    line: np.ndarray
    text: tuple[str, ...]
    kind: tuple[str, ...]
    value: np.ndarray
    rank: np.ndarray
    spearman: np.ndarray
    n_common: np.ndarray

    def top(self, m: int, k: int = 3) -> list[int]:
        """The rows of method ``m`` ranked 1 to ``k`` (rows with a value only)."""
        ranks = self.rank[m]
        order = sorted(np.flatnonzero(~np.isnan(ranks)).tolist(), key=lambda r: (ranks[r], r))
        return order[:k]


def _spearman(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    from scipy.stats import rankdata

    ok = ~np.isnan(a) & ~np.isnan(b)
    n = int(ok.sum())
    if n < 3:
        return math.nan, n
    ra, rb = rankdata(a[ok]), rankdata(b[ok])
    if ra.std() == 0 or rb.std() == 0:
        return math.nan, n
    return float(np.corrcoef(ra, rb)[0, 1]), n


def agreement(views: Sequence[Breakdown]) -> Agreement:
    """The statement views ``views`` (one per method, of one snippet) side by side (:class:`Agreement`)."""
    if not views:
        raise InputError("give at least one statement view (by_statement of an attribution)")
    if any(v.unit != "statement" for v in views) or len({v.source for v in views}) > 1:
        raise InputError("agreement compares statement views of one snippet: give by_statement(attribute(...)) of "
                         "the same source for each method")
    first: dict[int, tuple[int, int, str, str]] = {}
    for v in views:
        for r in range(v.n_rows):
            if r == v.target_row:
                continue
            first.setdefault(int(v.node[r]), (int(v.line[r]), r, v.text[r], v.kind[r]))
    nodes = sorted(first, key=lambda n: (first[n][0], n))
    col = {n: j for j, n in enumerate(nodes)}
    value = np.full((len(views), len(nodes)), np.nan)
    rank = np.full((len(views), len(nodes)), np.nan)
    for m, v in enumerate(views):
        for pos, r in enumerate(v.ranked(target_line=False)):
            value[m, col[int(v.node[r])]] = v.value[r]
            if not math.isnan(v.value[r]):
                rank[m, col[int(v.node[r])]] = pos + 1
    rho = np.full((len(views), len(views)), np.nan)
    common = np.zeros((len(views), len(views)), dtype=np.int64)
    for a in range(len(views)):
        for b in range(len(views)):
            rho[a, b], common[a, b] = _spearman(value[a], value[b])
    return Agreement(methods=tuple(v.method for v in views), node=np.array(nodes, dtype=np.int64),
                     line=np.array([first[n][0] for n in nodes], dtype=np.int64),
                     text=tuple(first[n][2] for n in nodes), kind=tuple(first[n][3] for n in nodes), value=value,
                     rank=rank, spearman=rho, n_common=common)
