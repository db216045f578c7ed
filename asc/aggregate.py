"""AsC-Eval's aggregation (the paper's theta at every level) for a batch of snippets at once.

:func:`batch_values` does for several snippets what :func:`asc.explain.node_values` (and the corpus tables'
global value) does for one, in one numpy call per level instead of one per snippet:

* node values (theta over each node's tokens): every node range of every snippet in one
  :func:`asc.concepts.aggregate_ranges` call, the ranges shifted by each snippet's offset;
* per node type, per category and the global value (over the categorized nodes): one
  :func:`asc.concepts.aggregate_segments` call each, a node's segment numbered ``snippet x segments + segment``.

The numbers are those of the snippet-by-snippet calls, bit for bit: a median or maximum is an order statistic,
the same number whatever else shares the array, and a mean adds each segment's values in the same order (bincount
and reduceat sum per segment in input order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from asc.align import Alignment
from asc.concepts import CategoryMap, aggregate_ranges, aggregate_segments, check_aggregate
from asc.syntax import SyntaxTree

__all__ = ["BatchValues", "batch_values"]


@dataclass(frozen=True)
class BatchValues:
    """The aggregation of a batch (F snippets), flat over all their nodes (N in all): ``values`` (N,) node values,
    ``snippet`` (N,) each node's snippet, ``category`` (N,) each node's category index in its snippet's mapping
    (-1: none), ``type_names`` (the batch's node types, sorted) with ``type_of`` (N,) each node's index there;
    ``per_type`` (F, types), ``per_category`` (F, most categories) and ``per_global`` (F,) the snippet-level
    values, NaN where absent; ``bounds`` (F + 1,) where each snippet's nodes start."""

    values: np.ndarray
    snippet: np.ndarray
    category: np.ndarray
    type_names: tuple[str, ...]
    type_of: np.ndarray
    per_type: np.ndarray
    per_category: np.ndarray
    per_global: np.ndarray
    bounds: np.ndarray


def batch_values(probs: Sequence[np.ndarray], trees: Sequence[SyntaxTree], alignments: Sequence[Alignment],
                 cmaps: Sequence[CategoryMap], aggregate: str = "median") -> BatchValues:
    """AsC-Eval's aggregation (:func:`asc.explain.node_values`, and the global value of the corpus tables) of
    several snippets in one call per level: ``probs[f]`` the token probabilities of snippet ``f``, its tree,
    alignment and category mapping."""
    check_aggregate(aggregate)
    n_nodes = np.array([t.n_nodes for t in trees], dtype=np.int64)
    bounds = np.concatenate([[0], np.cumsum(n_nodes)])
    sizes = np.array([len(a.order) for a in alignments], dtype=np.int64)
    shift = np.repeat(np.concatenate([[0], np.cumsum(sizes)[:-1]]), n_nodes)
    gathered = [np.asarray(p, dtype=np.float64)[a.order] for p, a in zip(probs, alignments, strict=True)]
    values = aggregate_ranges(np.concatenate(gathered) if gathered else np.zeros(0),
                              np.concatenate([a.lo for a in alignments]) + shift if len(trees) else np.zeros(0, np.int64),
                              np.concatenate([a.hi for a in alignments]) + shift if len(trees) else np.zeros(0, np.int64),
                              aggregate)
    snippet = np.repeat(np.arange(len(trees), dtype=np.int64), n_nodes)
    types = [name for t in trees for name in t.type]
    type_names = tuple(sorted(set(types)))
    index = {name: k for k, name in enumerate(type_names)}
    type_of = np.fromiter((index[name] for name in types), dtype=np.int64, count=len(types))
    n_types, n_cats = len(type_names), max((len(c.categories) for c in cmaps), default=0)
    per_type = aggregate_segments(values, snippet * n_types + type_of, len(trees) * n_types, aggregate)
    category = np.concatenate([_category_index(t, c) for t, c in zip(trees, cmaps, strict=True)]) if len(trees) \
        else np.zeros(0, np.int64)
    has = category >= 0
    per_category = aggregate_segments(values[has], (snippet * n_cats + category)[has], len(trees) * n_cats, aggregate)
    per_global = aggregate_segments(values[has], snippet[has], len(trees), aggregate)
    return BatchValues(values, snippet, category, type_names, type_of, per_type.reshape(len(trees), n_types),
                       per_category.reshape(len(trees), n_cats), per_global, bounds)


def _category_index(tree: SyntaxTree, cmap: CategoryMap) -> np.ndarray:
    """(N,) each node's category index in ``cmap.categories`` (-1: uncategorized)."""
    order = {c: k for k, c in enumerate(cmap.categories)}
    lookup = {name: order.get(cmap.category_of(name) or "", -1) for name in set(tree.type)}
    return np.fromiter((lookup[name] for name in tree.type), dtype=np.int64, count=tree.n_nodes)
