"""Token-node alignment (the paper's delta): which model tokens count for which AST node.

Spans are character offsets on both sides (the byte->char conversion happened once, in
:mod:`asc.syntax`). The binding follows ASTxplainer (section III-B and the authors' code,
as the ASTxplainer authors' code does): a token counts for **every node its span overlaps, ancestors included**.

The three cases the paper leaves implicit are options of :class:`AlignOptions`; defaults follow the
paper's code:

``whitespace`` (tokens made only of whitespace that lie outside every leaf, e.g. ``"\\n    "``)
    ``"enclosing"`` (default): they count for the nodes that enclose them (block, function, module),
    as in the authors' code. ``"skip"``: they count for no node. Whitespace inside a string or
    comment leaf is content and is bound either way.
``multi_leaf`` (a token that covers several leaves, e.g. ``"):"``)
    ``"all"`` (default): it counts for each leaf it covers (``)`` and ``:``) and their ancestors.
    ``"first"``: only for the leaf where its first visible character lies, and that leaf's ancestors.
``zero_width`` (nodes with an empty span: ``MISSING`` nodes from error recovery)
    ``"none"`` (default): they get no token and so no value (drawn grey). ``"next_token"``: they get
    the token at their position (the token the model produced where the missing element belonged).

Leading/trailing whitespace of a token (``" return"``) is not part of what the token means, so a
token's *core* span (whitespace stripped) is used for overlap; whitespace-only tokens keep their span.
Special tokens (BOS/EOS) have empty spans and are never bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from asc.errors import InputError
from asc.syntax import SyntaxTree

__all__ = ["AlignOptions", "Alignment", "align"]


@dataclass(frozen=True)
class AlignOptions:
    whitespace: Literal["enclosing", "skip"] = "enclosing"
    multi_leaf: Literal["all", "first"] = "all"
    zero_width: Literal["none", "next_token"] = "none"

    def __post_init__(self) -> None:
        for name, allowed in (("whitespace", ("enclosing", "skip")), ("multi_leaf", ("all", "first")),
                              ("zero_width", ("none", "next_token"))):
            if getattr(self, name) not in allowed:
                raise InputError(f"AlignOptions.{name}={getattr(self, name)!r}; choose one of {allowed}")


@dataclass(frozen=True)
class Alignment:
    """Node -> token binding in CSR form: node ``i`` owns ``indices[indptr[i]:indptr[i+1]]`` (sorted).

    ``indptr`` has shape ``(N+1,)``; ``indices`` holds token indices into the scored sequence.
    """

    indptr: np.ndarray
    indices: np.ndarray
    options: AlignOptions

    @property
    def n_nodes(self) -> int:
        return len(self.indptr) - 1

    def tokens_of(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node] : self.indptr[node + 1]]

    def counts(self) -> np.ndarray:
        """(N,) number of tokens bound to each node."""
        return np.diff(self.indptr)

    def node_of_binding(self) -> np.ndarray:
        """(nnz,) the node each entry of ``indices`` belongs to."""
        return np.repeat(np.arange(self.n_nodes), self.counts())


def _core_spans(source: str, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token spans with surrounding whitespace removed, and a whitespace-only flag."""
    cs, ce = start.copy(), end.copy()
    ws = np.zeros(len(start), dtype=bool)
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist(), strict=False)):
        text = source[s:e]
        stripped = text.strip()
        if not stripped:
            ws[i] = e > s
            continue
        cs[i] = s + (len(text) - len(text.lstrip()))
        ce[i] = e - (len(text) - len(text.rstrip()))
    return cs, ce, ws


def align(tree: SyntaxTree, start: np.ndarray, end: np.ndarray, special: np.ndarray | None = None,
          options: AlignOptions | None = None) -> Alignment:
    """Bind tokens (character spans ``start``/``end`` into ``tree.source``) to the tree's nodes."""
    options = options or AlignOptions()
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    special = np.zeros(len(start), bool) if special is None else np.asarray(special, bool)
    cs, ce, ws = _core_spans(tree.source, start, end)
    usable = ~special & (ce > cs)
    tok = np.flatnonzero(usable)
    ts, te = cs[tok], ce[tok]
    ns, ne = tree.start, tree.end
    n_nodes = tree.n_nodes

    if len(tok) and np.all(np.diff(ts) >= 0) and np.all(np.diff(te) >= 0):
        # monotone token spans: the tokens overlapping [a, b) form one contiguous run
        lo = np.searchsorted(te, ns, side="right")  # first token ending after a
        hi = np.searchsorted(ts, ne, side="left")  # first token starting at or after b
        hi = np.where(ne > ns, np.maximum(hi, lo), lo)  # zero-width nodes overlap nothing
        counts = hi - lo
        node_of = np.repeat(np.arange(n_nodes), counts)
        offs = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        pos = np.repeat(lo, counts) + offs
    else:  # general case (tokenizers with non-monotone offsets): dense overlap test
        hit = (ns[:, None] < te[None, :]) & (ts[None, :] < ne[:, None]) & (ne > ns)[:, None]
        node_of, pos = np.nonzero(hit)
    token_of = tok[pos] if len(tok) else pos.astype(np.int64)
    keep = np.ones(len(token_of), dtype=bool)

    leaf = tree.is_leaf & (ne > ns)
    if options.whitespace == "skip" and ws.any():
        in_leaf = np.zeros(len(start), dtype=bool)
        in_leaf[token_of[leaf[node_of]]] = True
        keep &= ~(ws[token_of] & ~in_leaf[token_of])
    if options.multi_leaf == "first":
        anchor = cs[token_of]
        keep &= (ns[node_of] <= anchor) & (anchor < ne[node_of])

    node_of, token_of = node_of[keep], token_of[keep]
    if options.zero_width == "next_token":
        zero = np.flatnonzero(ne == ns)
        if len(zero) and len(tok):
            # the token ending after the position (the one containing it, else the next one), the
            # earliest such by end; at the very end of the text, the last token. Order-independent.
            pos = ns[zero][:, None]
            after = np.where(te[None, :] > pos, te[None, :], np.iinfo(np.int64).max)
            k = np.where(after.min(axis=1) < np.iinfo(np.int64).max, after.argmin(axis=1), np.argmax(te))
            node_of = np.concatenate([node_of, zero])
            token_of = np.concatenate([token_of, tok[k]])

    order = np.lexsort((token_of, node_of))
    node_of, token_of = node_of[order], token_of[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(node_of, minlength=n_nodes))]).astype(np.int64)
    return Alignment(indptr=indptr, indices=token_of.astype(np.int64), options=options)
