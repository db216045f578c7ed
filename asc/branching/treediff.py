"""Two syntax trees aligned node by node: what changed between two branches (or two versions) of a snippet.

:func:`ast_diff` matches nodes top-down (rule in its docstring) and reports the nodes of one tree that the other
lacks (removed, added), matched leaves whose text differs (changed), and the first node in source order where
the trees part. The inspector's branch comparison and ``python -m asc branch`` read it; it needs no model.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from asc.errors import InputError
from asc.syntax import SyntaxTree

__all__ = ["TreeDiff", "ast_diff"]


@dataclass(frozen=True)
class TreeDiff:
    """Two trees aligned node by node (rule in :func:`ast_diff`). ``match_a`` (N_a,) is each node of ``a``'s
    counterpart in ``b`` (-1: removed), ``match_b`` (N_b,) the reverse (-1: added); ``changed`` (C, 2) holds
    matched leaf pairs whose text differs. ``first_divergence`` is ``(node of a, node of b)`` where the trees
    first part in source order (-1 on the side that has no node there), None for equal trees."""

    a: SyntaxTree
    b: SyntaxTree
    match_a: np.ndarray
    match_b: np.ndarray
    changed: np.ndarray
    first_divergence: tuple[int, int] | None

    @property
    def removed(self) -> np.ndarray:
        return np.flatnonzero(self.match_a < 0)

    @property
    def added(self) -> np.ndarray:
        return np.flatnonzero(self.match_b < 0)


def _pairs(a: SyntaxTree, b: SyntaxTree, ca: list[int], cb: list[int]) -> list[tuple[int, int]]:
    """Children aligned: the common head and tail of equal (type, text) children first (so two long lists that
    differ in a few places never reach difflib, quadratic on repetitive input), then equal runs in the rest,
    then by type inside each replaced stretch."""
    def same(i: int, j: int) -> bool:
        return a.type[i] == b.type[j] and a.end[i] - a.start[i] == b.end[j] - b.start[j] and a.text(i) == b.text(j)

    head = 0
    while head < min(len(ca), len(cb)) and same(ca[head], cb[head]):
        head += 1
    tail = 0
    while tail < min(len(ca), len(cb)) - head and same(ca[len(ca) - 1 - tail], cb[len(cb) - 1 - tail]):
        tail += 1
    out: list[tuple[int, int]] = list(zip(ca[:head], cb[:head], strict=True))
    ca, cb, rest = ca[head:len(ca) - tail], cb[head:len(cb) - tail], list(zip(ca[len(ca) - tail:], cb[len(cb) - tail:], strict=True))
    la, lb = [(a.type[i], a.text(i)) for i in ca], [(b.type[j], b.text(j)) for j in cb]
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if tag == "equal":
            out += zip(ca[i1:i2], cb[j1:j2], strict=True)
        elif tag == "replace":
            ta, tb = [a.type[i] for i in ca[i1:i2]], [b.type[j] for j in cb[j1:j2]]
            for t2, k1, k2, m1, m2 in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
                if t2 == "equal":
                    out += zip(ca[i1 + k1:i1 + k2], cb[j1 + m1:j1 + m2], strict=True)
    return out + rest


def ast_diff(a: SyntaxTree, b: SyntaxTree) -> TreeDiff:
    """Align two trees top-down: the roots match when their types do; under matched parents, children whose
    type and text are equal match in order (a longest-matching-blocks alignment, difflib), then the rest by
    type in order within each stretch that differs; a matched node's subtree recurses. Unmatched nodes of
    ``a`` are removed, of ``b`` added; matched leaves with different text are changed."""
    if a.language != b.language:
        raise InputError(f"compare trees of one language (got {a.language} and {b.language})")
    match_a = np.full(a.n_nodes, -1, dtype=np.int64)
    match_b = np.full(b.n_nodes, -1, dtype=np.int64)
    todo = [(0, 0)] if a.n_nodes and b.n_nodes and a.type[0] == b.type[0] else []
    while todo:
        i, j = todo.pop()
        match_a[i], match_b[j] = j, i
        todo += _pairs(a, b, a.children(i).tolist(), b.children(j).tolist())
    changed = [(i, int(match_a[i])) for i in np.flatnonzero((match_a >= 0) & a.is_leaf).tolist()
               if a.text(i) != b.text(int(match_a[i]))]
    cand_a = [(int(a.start[i]), int(a.depth[i]), i) for i in [*np.flatnonzero(match_a < 0), *(c[0] for c in changed)]]
    cand_b = [(int(b.start[j]), int(b.depth[j]), j) for j in [*np.flatnonzero(match_b < 0), *(c[1] for c in changed)]]
    at = min(c[0] for c in cand_a + cand_b) if cand_a or cand_b else -1
    first = tuple(int(min((c for c in cands if c[0] == at), default=(0, 0, -1))[2]) for cands in (cand_a, cand_b))
    return TreeDiff(a=a, b=b, match_a=match_a, match_b=match_b,
                    changed=np.asarray(changed, dtype=np.int64).reshape(-1, 2),
                    first_divergence=(first[0], first[1]) if at >= 0 else None)
