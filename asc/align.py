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

from asc.concepts import aggregate_ranges
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
    """Node -> token binding as ranges: node ``i`` owns ``order[lo[i]:hi[i]]`` (sorted, unique token indices
    into the scored sequence).

    Size: ``order`` has at most one entry per token plus one per zero-width node (``zero_width="next_token"``)
    when the token spans are monotone (every tokenizer we ship), so the alignment is O(tokens + nodes) however
    deep the tree: the ranges of nested nodes overlap instead of repeating a token once per ancestor (that
    repetition, tokens x depth entries, was what made a deeply nested input allocate gigabytes). Non-monotone
    spans fall back to one range per node (``order`` then holds every binding, at most tokens x (depth + 1)).

    ``indptr``/``indices``/``node_of_binding`` give the classic CSR form (node ``i`` owns
    ``indices[indptr[i]:indptr[i+1]]``); they *build* every (node, token) pair, tokens x depth entries, so the
    backend's own code uses the range helpers (:meth:`counts`, :meth:`segment_sum`, :meth:`aggregate`,
    :meth:`covered_tokens`, :meth:`last_token`), which never do.
    """

    order: np.ndarray  # int64 (K,)
    lo: np.ndarray  # int64 (N,)
    hi: np.ndarray  # int64 (N,)
    options: AlignOptions

    @property
    def n_nodes(self) -> int:
        return len(self.lo)

    def tokens_of(self, node: int) -> np.ndarray:
        return self.order[self.lo[node] : self.hi[node]]

    def counts(self) -> np.ndarray:
        """(N,) number of tokens bound to each node."""
        return self.hi - self.lo

    @property
    def n_bindings(self) -> int:
        """Number of (node, token) pairs: the length of :attr:`indices`."""
        return int(self.counts().sum())

    @property
    def indptr(self) -> np.ndarray:
        """(N+1,) CSR row pointers of :attr:`indices`."""
        return np.concatenate([[0], np.cumsum(self.counts())]).astype(np.int64)

    @property
    def indices(self) -> np.ndarray:
        """(nnz,) every node's tokens one after the other (built on each call: nnz = :attr:`n_bindings`)."""
        counts = self.counts()
        first = np.cumsum(counts) - counts  # where each node's run starts in the output
        return self.order[np.repeat(self.lo - first, counts) + np.arange(int(counts.sum()))]

    def node_of_binding(self) -> np.ndarray:
        """(nnz,) the node each entry of :attr:`indices` belongs to."""
        return np.repeat(np.arange(self.n_nodes), self.counts())

    def segment_sum(self, weights: np.ndarray) -> np.ndarray:
        """(N,) per node, the sum of ``weights`` (one per token) over its tokens: prefix sums, O(tokens + nodes)."""
        w = np.asarray(weights, dtype=np.float64)[self.order]
        prefix = np.concatenate([[0.0], np.cumsum(w)])
        return prefix[self.hi] - prefix[self.lo]

    def aggregate(self, values: np.ndarray, how: str = "median") -> np.ndarray:
        """(N,) theta of ``values`` (one per token, NaN ignored) over each node's tokens
        (:func:`asc.concepts.aggregate_ranges`); NaN for a node with no value."""
        return aggregate_ranges(np.asarray(values, dtype=np.float64)[self.order], self.lo, self.hi, how)

    def covered_tokens(self, nodes: np.ndarray, n_tokens: int) -> np.ndarray:
        """bool (n_tokens,): the tokens bound to at least one node of ``nodes`` (bool mask (N,) or node ids)."""
        picked = np.zeros(self.n_nodes, dtype=bool)
        picked[nodes] = True
        edges = np.zeros(len(self.order) + 1, dtype=np.int64)
        np.add.at(edges, self.lo[picked], 1)
        np.add.at(edges, self.hi[picked], -1)
        out = np.zeros(n_tokens, dtype=bool)
        out[self.order[np.cumsum(edges)[:-1] > 0]] = True
        return out

    def last_token(self) -> np.ndarray:
        """(N,) each node's last (highest) token index, -1 for a node with none."""
        has = self.hi > self.lo
        return np.where(has, self.order[np.where(has, self.hi - 1, 0)] if len(self.order) else -1, -1)


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


# cells of one block of the node x token overlap test on non-monotone spans (bounded memory whatever the input)
_BLOCK_CELLS = 1 << 22


def _overlaps(ns: np.ndarray, ne: np.ndarray, ts: np.ndarray, te: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(node, token position) pairs whose spans overlap (zero-width nodes overlap nothing), tested in blocks of
    nodes so no node x token array larger than :data:`_BLOCK_CELLS` cells is ever allocated."""
    step = max(1, _BLOCK_CELLS // max(1, len(ts)))
    nodes, pos = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for a in range(0, len(ns), step):
        s, e = ns[a : a + step, None], ne[a : a + step, None]
        n, p = np.nonzero((s < te[None, :]) & (ts[None, :] < e) & (e > s))
        nodes.append(n + a)
        pos.append(p)
    return np.concatenate(nodes), np.concatenate(pos)


def _next_token(pos: np.ndarray, te: np.ndarray) -> np.ndarray:
    """For each position, the token (index into ``te``) ending after it with the earliest end (the lowest index
    among equal ends); at or past the last end, the first token with the latest end. Sorting, not a dense test."""
    by_end = np.lexsort((np.arange(len(te)), te))
    ends = te[by_end]
    j = np.searchsorted(ends, pos, side="right")
    last = by_end[np.searchsorted(ends, ends[-1], side="left")]
    return np.where(j < len(te), by_end[np.minimum(j, len(te) - 1)], last)


def align(tree: SyntaxTree, start: np.ndarray, end: np.ndarray, special: np.ndarray | None = None,
          options: AlignOptions | None = None) -> Alignment:
    """Bind tokens (character spans ``start``/``end`` into ``tree.source``) to the tree's nodes.

    Monotone spans (each token starts and ends no earlier than the previous one) take the range path: every
    node's tokens are one run of the token list, found by binary search, so time and memory are
    O((tokens + nodes) log tokens) at any depth. Other spans take a blockwise overlap test (module constant
    ``_BLOCK_CELLS`` bounds each block)."""
    options = options or AlignOptions()
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    special = np.zeros(len(start), bool) if special is None else np.asarray(special, bool)
    cs, ce, ws = _core_spans(tree.source, start, end)
    usable = ~special & (ce > cs)
    tok = np.flatnonzero(usable)
    ts, te = cs[tok], ce[tok]
    ns, ne = tree.start, tree.end
    leaf = tree.is_leaf & (ne > ns)
    zero = np.flatnonzero(ne == ns) if options.zero_width == "next_token" and len(tok) else np.zeros(0, np.int64)
    extra = tok[_next_token(ns[zero], te)] if len(zero) else np.zeros(0, np.int64)

    if len(tok) and np.all(np.diff(ts) >= 0) and np.all(np.diff(te) >= 0):
        # monotone token spans: the tokens overlapping [a, b) form one contiguous run [lo, hi) of tok
        lo = np.searchsorted(te, ns, side="right")  # first token ending after a
        hi = np.searchsorted(ts, ne, side="left")  # first token starting at or after b
        hi = np.where(ne > ns, np.maximum(hi, lo), lo)  # zero-width nodes overlap nothing
        keep = np.ones(len(tok), dtype=bool)
        if options.whitespace == "skip" and ws.any():
            edges = np.zeros(len(tok) + 1, dtype=np.int64)  # tokens inside some leaf: a sweep over leaf runs
            np.add.at(edges, lo[leaf], 1)
            np.add.at(edges, hi[leaf], -1)
            keep = ~(ws[tok] & ~(np.cumsum(edges)[:-1] > 0))
        if options.multi_leaf == "first":  # only nodes holding the token's first visible character
            lo = np.minimum(np.maximum(lo, np.searchsorted(ts, ns, side="left")), hi)
        kept = np.concatenate([[0], np.cumsum(keep)])  # run positions in the kept tokens
        order, lo, hi = tok[keep], kept[lo], kept[hi]
        if len(zero):  # each zero-width node owns one token, stored after the others
            lo[zero] = len(order) + np.arange(len(zero))
            hi[zero] = lo[zero] + 1
            order = np.concatenate([order, extra])
        return Alignment(order=order.astype(np.int64), lo=lo.astype(np.int64), hi=hi.astype(np.int64),
                         options=options)

    # general case (tokenizers with non-monotone offsets): blockwise overlap test, one range per node
    node_of, pos = _overlaps(ns, ne, ts, te)
    token_of = tok[pos] if len(tok) else pos.astype(np.int64)
    keep_pair = np.ones(len(token_of), dtype=bool)
    if options.whitespace == "skip" and ws.any():
        in_leaf = np.zeros(len(start), dtype=bool)
        in_leaf[token_of[leaf[node_of]]] = True
        keep_pair &= ~(ws[token_of] & ~in_leaf[token_of])
    if options.multi_leaf == "first":
        anchor = cs[token_of]
        keep_pair &= (ns[node_of] <= anchor) & (anchor < ne[node_of])
    node_of = np.concatenate([node_of[keep_pair], zero])
    token_of = np.concatenate([token_of[keep_pair], extra])
    order = np.lexsort((token_of, node_of))
    node_of, token_of = node_of[order], token_of[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(node_of, minlength=tree.n_nodes))]).astype(np.int64)
    return Alignment(order=token_of.astype(np.int64), lo=indptr[:-1], hi=indptr[1:], options=options)
