"""AsC-Eval for a batch of snippets at once: the model-free work first, then one vectorized aggregation per batch.

:func:`prepare` does for one snippet everything that needs no model: tokenizing (:func:`asc.scores.encode_with`),
parsing (:func:`asc.syntax.parse`) and aligning (:func:`asc.align.align`). It needs the tokenizer alone, so a
corpus run does it in worker processes for the next chunks while the model runs the current one
(:mod:`asc.corpus.feed`). :func:`score_prepared` scores prepared snippets (the forward passes of
:func:`asc.scores.score_texts` on the ids already made) and :func:`explain_prepared` builds their
:class:`~asc.explain.Explanation` objects with the aggregation of the whole batch in a few numpy calls:

(:func:`asc.aggregate.batch_values`: node values, per type, per category and global, each level one call for
the whole batch). Nothing departs from :func:`asc.explain.explain_scored` (the function-by-function path, kept as
the reference): the values are the same bits (``tests/asc/corpus/test_pipeline_equal.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from asc.aggregate import BatchValues
from asc.align import Alignment, AlignOptions, align
from asc.concepts import CategoryMap, load_categories
from asc.explain import Explanation, explanations_of
from asc.models import ModelBundle
from asc.scores import TokenScores, encode_with, fill_scores, model_vocab, vocab_array, window_rows, window_size
from asc.syntax import SyntaxTree, parse

__all__ = ["Prepared", "explain_prepared", "prepare", "score_prepared"]


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


def explain_prepared(info: dict, prepared: Sequence[Prepared], scores: Sequence[TokenScores], aggregate: str = "median",
                     cmaps: Mapping[str, CategoryMap] | None = None) -> tuple[list[Explanation], BatchValues]:
    """The :class:`~asc.explain.Explanation` of each prepared, scored snippet (``info``:
    :meth:`ModelBundle.summary`), as :func:`asc.explain.explain_scored` makes it, and the batch's aggregation."""
    cmaps = dict(cmaps or {})
    maps = [cmaps.setdefault(p.language, load_categories(p.language)) for p in prepared]
    return explanations_of(info, [p.tree for p in prepared], scores, [p.alignment for p in prepared], maps, aggregate)
