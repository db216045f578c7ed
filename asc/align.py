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
from asc.syntax import MAX_AST_DEPTH, SyntaxTree

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
    spans fall back to one range per node (``order`` then holds every binding, at most tokens x (depth + 1)
    for tokens that each lie in one leaf; :func:`align` refuses more).

    Nothing here lists every (node, token) pair: the range helpers (:meth:`tokens_of`, :meth:`counts`,
    :meth:`segment_sum`, :meth:`aggregate`, :meth:`covered_tokens`, :meth:`last_token`) work on the ranges.
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


def _runs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``lo[0]..hi[0]-1, lo[1]..hi[1]-1, ...`` in one array (every ``lo <= hi``)."""
    counts = hi - lo
    first = np.cumsum(counts) - counts  # where each run starts in the output
    return np.repeat(lo - first, counts) + np.arange(int(counts.sum()), dtype=np.int64)


def _overlaps(ns: np.ndarray, ne: np.ndarray, ts: np.ndarray, te: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(node, token position) pairs whose spans overlap (``ns < te and ts < ne``; zero-width nodes overlap
    nothing; every token ``ts < te``), found by sorting instead of testing every node x token cell. A token
    overlaps a non-empty node ``[a, b)`` either by starting inside it (``a <= ts < b``: for each node, one run
    of the tokens sorted by start) or by starting before it and ending after its start (``ts < a < te``: for
    each token, one run of the nodes sorted by start), never both: O((tokens + nodes) log + pairs) time. An
    :class:`InputError` before any pair is listed when there are more than tokens x (depth limit + 1) + nodes
    (what token spans that each lie in one leaf give at most): spans that cover much of the text each."""
    full = np.flatnonzero(ne > ns)
    a, b = ns[full], ne[full]
    by_ts = np.argsort(ts, kind="stable")
    lo1, hi1 = np.searchsorted(ts[by_ts], a, side="left"), np.searchsorted(ts[by_ts], b, side="left")
    by_a = np.argsort(a, kind="stable")
    lo2 = np.searchsorted(a[by_a], ts, side="right")
    hi2 = np.maximum(np.searchsorted(a[by_a], te, side="left"), lo2)
    n_pairs = int((hi1 - lo1).sum() + (hi2 - lo2).sum())
    if n_pairs > len(ts) * (MAX_AST_DEPTH + 1) + len(ns):
        raise InputError(f"the tokenizer's token spans overlap {n_pairs:,} (node, token) pairs of a {len(ns):,}-node "
                         f"tree and {len(ts):,} tokens: its offsets are neither in order nor token-sized; use a "
                         "tokenizer with offset mapping in text order (every Hugging Face fast tokenizer)")
    nodes = np.concatenate([np.repeat(full, hi1 - lo1), full[by_a[_runs(lo2, hi2)]]])
    pos = np.concatenate([by_ts[_runs(lo1, hi1)], np.repeat(np.arange(len(ts), dtype=np.int64), hi2 - lo2)])
    return nodes.astype(np.int64), pos.astype(np.int64)


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
    O((tokens + nodes) log tokens) at any depth. Other spans take a sort-based sweep (:func:`_overlaps`) that
    lists every binding, the same ones."""
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

    # general case (tokenizers with non-monotone offsets): every overlapping pair by sorting, one range per node
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
