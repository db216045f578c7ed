"""AsC-Eval per layer: where in the network a model becomes sure of each syntax concept.

The logit lens (:mod:`asc.lens`) gives every layer's probability of each actual next token; this module aligns
and aggregates those exactly as the output's (same tree, same binding, same theta, same categories:
:func:`asc.explain.node_values`), giving node values ``(L + 1, N)`` and category values ``(L + 1, C)`` with layer 0
the embeddings and layer ``L`` the output (equal to :func:`asc.explain.explain`).

"Crossing": the first layer whose category value reaches :data:`asc.concepts.CONFIDENCE_LINE`
(0.6, the line the inspector's colour scale is centred on), ``None`` when no layer does. Relative depth
``layer / L`` puts models of different depth on one axis.

Vocabulary (one word per concept; "layer" is only the coordinate, never a module's name):

- **lens**: the logit lens itself, each layer's next-token statistics (:mod:`asc.lens`);
- **depth**: AsC-Eval per layer read through the lens: this module (one snippet), :mod:`asc.corpus.depth` (corpus
  runs made with ``--per-layer``, whose table keeps the folder name ``layers/``), :mod:`asc.viz.depth` and
  :mod:`asc.viz.corpus_depth` (their figures), ``ui/depth_view.py`` (the inspector's section);
- **probes**: linear probes trained on each layer's hidden states (INSPECT, glueCode's NPATH/NULL):
  :mod:`probes.inspect.runs` and the *Layer heatmaps* page, ``pages/probing.py``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.align import AlignOptions
from asc.concepts import CONFIDENCE_LINE, CategoryMap, check_aggregate, load_categories
from asc.display import show
from asc.errors import InputError
from asc.explain import Explanation, checked_tree, explain_scored, node_values
from asc.generate import Completion
from asc.lens import LayerScores, lens_ids, lens_scores
from asc.models import ModelBundle
from asc.scores import vocab_text
from asc.syntax import SyntaxTree

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["LayerExplanation", "explain_completion_layers", "explain_layers", "layer_values", "top_vocab"]



@dataclass(frozen=True)
class LayerExplanation:
    """AsC-Eval of one snippet at every layer. ``values``: ``(L + 1, N)`` node values; ``category_values``:
    ``(L + 1, C)`` in the order of ``explanation.categories`` (NaN where a category is absent); ``explanation`` is
    the output layer's :class:`~asc.explain.Explanation`; ``lens`` the per-layer token statistics."""

    explanation: Explanation
    lens: LayerScores
    values: np.ndarray
    category_values: np.ndarray

    @property
    def n_layers(self) -> int:
        """Rows: the embeddings plus every block."""
        return int(self.values.shape[0])

    @property
    def categories(self) -> tuple[str, ...]:
        return self.explanation.categories

    def crossing(self, threshold: float = CONFIDENCE_LINE) -> dict[str, int | None]:
        """Per category, the first layer whose value is ``>= threshold`` (None: never, or absent)."""
        out: dict[str, int | None] = {}
        for k, cat in enumerate(self.categories):
            column = self.category_values[:, k]
            hits = np.nonzero(np.nan_to_num(column, nan=-1.0) >= threshold)[0]
            out[cat] = int(hits[0]) if len(hits) else None
        return out

    def category_frame(self) -> pd.DataFrame:
        """Long table ``layer, depth (layer / L), category, value`` (absent categories left out)."""
        import pandas as pd

        last = max(1, self.n_layers - 1)
        rows = [{"layer": layer, "depth": layer / last, "category": cat, "value": float(self.category_values[layer, k])}
                for layer in range(self.n_layers) for k, cat in enumerate(self.categories)
                if not math.isnan(self.category_values[layer, k])]
        return pd.DataFrame(rows, columns=["layer", "depth", "category", "value"])

    def node_curve(self, node: int) -> pd.DataFrame:
        """One node's value at every layer: ``layer, depth (layer / L), value`` (NaN where it has no token)."""
        import pandas as pd

        if not 0 <= node < self.values.shape[1]:
            raise InputError(f"node {node} is not in this snippet's tree (0 .. {self.values.shape[1] - 1})")
        last = max(1, self.n_layers - 1)
        layers = np.arange(self.n_layers)
        return pd.DataFrame({"layer": layers, "depth": layers / last, "value": self.values[:, node].astype(float)})

    def at(self, layer: int, vocab: Mapping[int, str] | Sequence[str] | None = None) -> Explanation:
        """The :class:`~asc.explain.Explanation` as layer ``layer`` sees the snippet (negative counts from the
        output): the same tree and alignment, that layer's token statistics (probability, log-probability,
        entropy, rank, top-k) and the node, node-type and category values aggregated from them, so every view
        that draws an Explanation draws that layer. The output layer returns :attr:`explanation` itself.

        ``vocab`` decodes the layer's top-k ids (``vocab[id]``: :func:`top_vocab`, or the whole
        :func:`~asc.scores.vocab_text`); without it, ids the output's top-k decoded keep that text and the others
        read ``<id 123>``."""
        n = self.n_layers
        if not -n <= layer < n:
            raise InputError(f"layer {layer} does not exist: this model has layers 0 (embeddings) .. {n - 1} (output)")
        layer %= n
        ex = self.explanation
        if layer == n - 1:
            return ex
        lens = self.lens
        if vocab is None:
            known = {int(i): t for row_ids, row_text in zip(ex.scores.top_ids.tolist(), ex.scores.top_text)
                     for i, t in zip(row_ids, row_text)}
            texts: Any = _Decoded(known)
        else:
            texts = vocab
        top_ids = lens.top_ids[layer]
        scores = dataclasses.replace(
            ex.scores, prob=lens.prob[layer], logprob=lens.logprob[layer], entropy=lens.entropy[layer],
            rank=lens.rank[layer], top_ids=top_ids, top_probs=lens.top_probs[layer],
            top_text=tuple(tuple(texts[i] for i in row if i >= 0) for row in top_ids.tolist()))
        cmap = CategoryMap(ex.tree.language, ex.categories,
                           {t: c for t, c in zip(ex.tree.type, ex.node_category) if c is not None}, ())
        values, concepts, by_cat = node_values(scores.prob, ex.tree, ex.alignment, cmap, ex.aggregate)
        return dataclasses.replace(ex, scores=scores, values=values, concept_values=concepts, category_values=by_cat)

    def _repr_html_(self) -> str:
        """Inline in a notebook: a category x layer table colored on the value scale (first layer at or above the
        confidence line per row), then the output layer's explanation."""
        return str(show(self, "html"))

    def layers_heatmap(self, **options: Any) -> go.Figure:
        """The inspector's category x layer heatmap: :func:`asc.viz.category_layer_heatmap` ``(self, **options)``
        (``threshold``, ``layer`` to outline one, ``title``)."""
        return show(self, "layers_heatmap", **options)

    def to_dict(self, threshold: float = CONFIDENCE_LINE) -> dict:
        """The ``"layers"`` block of ``python -m asc explain --per-layer --json`` (docs/cli.md): per-layer token
        probabilities (null where a token has no prediction), category values and crossings."""
        def clean(row: np.ndarray) -> list[float | None]:
            return [None if math.isnan(v) else round(float(v), 6) for v in row.tolist()]

        return {"n_layers": self.n_layers, "layer_0": "embeddings", "threshold": threshold,
                "token_prob": [clean(row) for row in self.lens.prob],
                "category_values": {cat: clean(self.category_values[:, k]) for k, cat in enumerate(self.categories)},
                "crossing": self.crossing(threshold)}


class _Decoded(dict):
    """Top-k texts known from the output layer; an id it never decoded reads ``<id N>``."""

    def __missing__(self, key: int) -> str:
        return f"<id {key}>"


def top_vocab(lens: LayerScores, tokenizer: Any) -> dict[int, str]:
    """The text of every id in any layer's top-k (what :meth:`LayerExplanation.at` needs to decode them), decoded
    as the output's alternatives are (:func:`asc.scores.vocab_text`): a small table instead of the vocabulary."""
    table = vocab_text(tokenizer, int(lens.top_ids.max(initial=-1)) + 1)
    return {int(i): table[int(i)] for i in np.unique(lens.top_ids) if i >= 0}


def layer_values(explanation: Explanation, lens: LayerScores, categories: CategoryMap) -> tuple[np.ndarray, np.ndarray]:
    """Node values ``(L + 1, N)`` and category values ``(L + 1, C)`` of every lens layer over ``explanation``'s
    tree and alignment (its aggregate and ``categories``)."""
    rows, cats = [], []
    for layer in range(lens.n_layers):
        values, _, by_cat = node_values(lens.prob[layer], explanation.tree, explanation.alignment, categories,
                                        explanation.aggregate)
        rows.append(values)
        cats.append([by_cat[c] for c in categories.categories])
    return np.vstack(rows), np.asarray(cats, dtype=np.float64)


def explain_layers(bundle: ModelBundle, source: str, language: str = "python", aggregate: str = "median",
                   options: AlignOptions | None = None, categories: CategoryMap | None = None,
                   max_window: int | None = None, exact: bool = False,
                   on_layer: Callable[[int, int], None] | None = None,
                   tree: SyntaxTree | None = None) -> LayerExplanation:
    """AsC-Eval of ``source`` at every layer of ``bundle`` (one forward pass and one unembedding per layer;
    ``exact``: float32 unembeddings for every layer, see :mod:`asc.lens`); ``tree``: the snippet's syntax tree
    from :func:`asc.explain.checked_tree`, not parsed again."""
    tree = checked_tree(source, language) if tree is None else tree
    check_aggregate(aggregate)
    lens = lens_scores(bundle, source, max_window=max_window, exact=exact, on_layer=on_layer)
    return _from_lens(bundle, lens, language, aggregate, options, categories, tree)


def explain_completion_layers(bundle: ModelBundle, comp: Completion, language: str = "python",
                              aggregate: str = "median", options: AlignOptions | None = None,
                              categories: CategoryMap | None = None, max_window: int | None = None,
                              exact: bool = False,
                              on_layer: Callable[[int, int], None] | None = None) -> LayerExplanation:
    """AsC-Eval of prompt + completion at every layer, on the exact ids (prompt's and generated, as
    :func:`asc.generate.explain_completion` scores the output): its tokens are the completion's, so the output
    layer equals that explanation and the generated part starts at ``comp.n_prompt``."""
    tree = checked_tree(comp.text, language)
    check_aggregate(aggregate)
    lens = lens_ids(bundle, comp.text, comp.ids, comp.start, comp.end, comp.special, max_window=max_window,
                    exact=exact, on_layer=on_layer)
    return _from_lens(bundle, lens, language, aggregate, options, categories, tree)


def _from_lens(bundle: ModelBundle, lens: LayerScores, language: str, aggregate: str, options: AlignOptions | None,
               categories: CategoryMap | None, tree: SyntaxTree) -> LayerExplanation:
    cmap = categories or load_categories(language)
    explanation = explain_scored(bundle.summary(), lens.output, language, aggregate, options, cmap, tree)
    values, by_cat = layer_values(explanation, lens, cmap)
    return LayerExplanation(explanation, lens, values, by_cat)
