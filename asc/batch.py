"""AsC-Eval for a batch of snippets at once: the model-free work first, then one vectorized aggregation per batch.

:func:`prepare` does for one snippet everything that needs no model: tokenizing (:func:`asc.scores.encode_with`),
parsing (:func:`asc.syntax.parse`) and aligning (:func:`asc.align.align`). It needs the tokenizer alone, so a
corpus run does it in worker processes for the next chunks while the model runs the current one
(:mod:`asc.corpus.feed`). :func:`score_prepared` scores prepared snippets (the forward passes of
:func:`asc.scores.score_texts` on the ids already made) and :func:`explain_prepared` builds their
:class:`~asc.explain.Explanation` objects with the aggregation of the whole batch in a few numpy calls:

* node values (the paper's theta over each node's tokens): every node range of every snippet in one
  :func:`asc.concepts.aggregate_ranges` call, the ranges shifted by each snippet's offset;
* per node type, per category and the global value: one :func:`asc.concepts.aggregate_segments` call each, the
  segment of a node numbered ``snippet x segments + segment``.

Nothing departs from :func:`asc.explain.explain_scored` (the function-by-function path, kept as the reference):
order statistics pick the same numbers whatever else is in the array, and sums add each segment's values in the
same order, so the values are the same bits (``tests/asc/corpus/test_pipeline_equal.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from asc.align import Alignment, AlignOptions, align
from asc.concepts import CategoryMap, aggregate_ranges, aggregate_segments, check_aggregate, load_categories
from asc.explain import Explanation
from asc.models import ModelBundle
from asc.scores import TokenScores, encode_with, fill_scores, model_vocab, vocab_array, window_rows, window_size
from asc.syntax import SyntaxTree, parse

__all__ = ["BatchValues", "Prepared", "batch_values", "explain_prepared", "prepare", "score_prepared"]


@dataclass(frozen=True)
class Prepared:
    """One snippet made ready for the model: its tokens (``ids``, character spans, special flags; shape (T,)),
    syntax tree and alignment. Plain arrays and strings: it pickles cheaply between processes."""

    source: str
    language: str
    ids: np.ndarray
    start: np.ndarray
    end: np.ndarray
    special: np.ndarray
    tree: SyntaxTree
    alignment: Alignment

    @property
    def item(self) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(source, ids, start, end, special)``, what :func:`asc.scores.fill_scores` takes."""
        return self.source, self.ids, self.start, self.end, self.special


def prepare(tokenizer: Any, source: str, language: str = "python", options: AlignOptions | None = None) -> Prepared:
    """Tokenize, parse and align ``source``: everything AsC-Eval does to a snippet that needs no model."""
    ids, start, end, special = encode_with(tokenizer, source)
    tree = parse(source, language)
    return Prepared(source, language, ids, start, end, special, tree, align(tree, start, end, special, options))


def score_prepared(bundle: ModelBundle, prepared: Sequence[Prepared], max_window: int | None = None) -> list[TokenScores]:
    """:func:`asc.scores.score_texts` of prepared snippets (their ids, not tokenized again): the same windows,
    batches and values."""
    import asc.scores as scores  # the module, so a benchmark's stand-in for the forward passes is seen

    bundle.require_causal()
    k = min(scores.TOP_K, len(bundle.tokenizer))
    rows, plans = window_rows([p.ids for p in prepared], window_size(bundle, max_window))
    with bundle.lock:
        stats = scores._forward_rows(bundle, rows, k) if rows else []
    return fill_scores([p.item for p in prepared], plans, stats, k, vocab_array(bundle.tokenizer, model_vocab(bundle)))


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


def explain_prepared(info: dict, prepared: Sequence[Prepared], scores: Sequence[TokenScores], aggregate: str = "median",
                     cmaps: Mapping[str, CategoryMap] | None = None) -> tuple[list[Explanation], BatchValues]:
    """The :class:`~asc.explain.Explanation` of each prepared, scored snippet (``info``:
    :meth:`ModelBundle.summary`), as :func:`asc.explain.explain_scored` makes it, and the batch's aggregation."""
    cmaps = dict(cmaps or {})
    maps = [cmaps.setdefault(p.language, load_categories(p.language)) for p in prepared]
    trees = [p.tree for p in prepared]
    got = batch_values([s.prob for s in scores], trees, [p.alignment for p in prepared], maps, aggregate)
    out = []
    for f, (p, s, cmap) in enumerate(zip(prepared, scores, maps, strict=True)):
        per_type = got.per_type[f]
        concept_values = {name: float(per_type[k]) for k, name in enumerate(got.type_names)
                          if not np.isnan(per_type[k])}
        node_cat = tuple(cmap.category_of(t) for t in p.tree.type)
        out.append(Explanation(model=info, tree=p.tree, scores=s, alignment=p.alignment, aggregate=aggregate,
                               values=got.values[got.bounds[f] : got.bounds[f + 1]], node_category=node_cat,
                               concept_values=concept_values,
                               category_values={c: float(got.per_category[f, k]) for k, c in enumerate(cmap.categories)},
                               categories=cmap.categories))
    return out, got
