"""AsC-Eval for one snippet: parse + score + align + aggregate into an :class:`Explanation`.

``explain(bundle, source)`` is the entry point of the CLI's ``explain`` and of the pages. Scoring
is one model call; everything after it is vectorized numpy, and ``explain_many`` aggregates all its snippets at
once (:func:`explanations_of`; ``explain_scored`` is the snippet-by-snippet path, the same values). ``explain_scored`` builds the same
result from scores computed elsewhere (batched corpus runs, generated token ids). ``compare_snippet``
stacks several models' explanations of one text node by node (the tree depends on the text, not on
the tokenizer, so node values subtract directly).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.aggregate import BatchValues, batch_values
from asc.align import Alignment, AlignOptions, align
from asc.concepts import CategoryMap, aggregate_segments, category_label, check_aggregate, load_categories
from asc.display import show
from asc.errors import InputError
from asc.models import ModelBundle
from asc.scores import TokenScores, score_texts
from asc.syntax import SyntaxTree, encode_source, parse

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["MAX_SOURCE_CHARS", "Explanation", "SnippetComparison", "check_source", "checked_tree", "compare_snippet",
           "explain",
           "explain_many", "explain_scored", "explanations_of", "node_values"]

# Longest snippet explained in one go: memory grows with the text (a 2 MB file took 4 GB), and a
# per-node explanation of a whole large file is unreadable anyway. The browser view takes less (ui.guards).
MAX_SOURCE_CHARS = 200_000


def _none_if_nan(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


@dataclass(frozen=True)
class Explanation:
    """Everything AsC-Eval knows about one snippet.

    ``values`` has shape ``(N,)`` (one per node of ``tree``, NaN = no predicted token);
    ``node_category`` has one entry per node (``None`` for uncategorized types).
    ``concept_values`` maps each node type present in the snippet to its snippet-level value and
    ``category_values`` each category of the mapping to its value (NaN when absent: missing, not 0).
    """

    model: dict
    tree: SyntaxTree
    scores: TokenScores
    alignment: Alignment
    aggregate: str
    values: np.ndarray
    node_category: tuple[str | None, ...]
    concept_values: dict[str, float]
    category_values: dict[str, float]
    categories: tuple[str, ...] = field(default=())

    @property
    def source(self) -> str:
        return self.tree.source

    @property
    def loss(self) -> float:
        return self.scores.loss

    @property
    def perplexity(self) -> float:
        return math.exp(self.loss) if not math.isnan(self.loss) else math.nan

    def to_dict(self) -> dict:
        """The JSON layout of ``python -m asc explain --json`` (documented in docs/cli.md)."""
        s, t = self.scores, self.tree
        texts = s.text
        tokens = []
        for i in range(s.n_tokens):
            has = not math.isnan(s.prob[i])
            tokens.append({
                "index": i, "text": texts[i], "start": int(s.start[i]), "end": int(s.end[i]),
                "special": bool(s.special[i]),
                "prob": float(s.prob[i]) if has else None,
                "logprob": float(s.logprob[i]) if has else None,
                "entropy": float(s.entropy[i]) if has else None,
                "rank": int(s.rank[i]) if has else None,
                "top": [{"text": txt, "prob": float(p)} for txt, p in zip(s.top_text[i], s.top_probs[i], strict=False)] if has else [],
            })
        nodes = []
        # every node's tokens are one slice of ``bindings``: the output grows with tokens + nodes, never with
        # tokens x depth (a list per node made 132 MB of JSON for 60,000 characters nested 252 levels deep)
        al = self.alignment
        for i in range(t.n_nodes):
            nodes.append({
                "id": i, "type": t.type[i], "named": bool(t.named[i]), "start": int(t.start[i]),
                "end": int(t.end[i]), "parent": int(t.parent[i]) if t.parent[i] >= 0 else None,
                "depth": int(t.depth[i]), "category": category_label(self.node_category[i]),
                "is_error": bool(t.is_error[i]),
                "is_missing": bool(t.is_missing[i]), "token_slice": [int(al.lo[i]), int(al.hi[i])],
                "value": _none_if_nan(self.values[i]),
            })
        return {
            "model": dict(self.model),
            "aggregate": self.aggregate,
            "language": t.language,
            "tokens": tokens,
            "bindings": al.order.tolist(),
            "nodes": nodes,
            "snippet": {
                "n_tokens": s.n_tokens, "n_nodes": t.n_nodes, "ast_levels": t.n_levels, "has_error": t.has_error,
                "loss": _none_if_nan(s.loss), "perplexity": _none_if_nan(self.perplexity),
                "n_windows": s.n_windows,
                "categories": {c: _none_if_nan(v) for c, v in self.category_values.items()},
                "concepts": {c: _none_if_nan(v) for c, v in sorted(self.concept_values.items())},
            },
        }

    def token_frame(self) -> pd.DataFrame:
        """One row per token (pandas DataFrame)."""
        import pandas as pd

        s = self.scores
        return pd.DataFrame({
            "index": np.arange(s.n_tokens), "text": list(s.text), "start": s.start, "end": s.end,
            "special": s.special, "prob": s.prob, "logprob": s.logprob, "entropy": s.entropy, "rank": s.rank,
            "top": [" | ".join(f"{t!r}:{p:.3f}" for t, p in zip(tt, tp, strict=False)) for tt, tp in zip(s.top_text, s.top_probs, strict=False)],
        })

    def node_frame(self) -> pd.DataFrame:
        """One row per node (pandas DataFrame)."""
        import pandas as pd

        t = self.tree
        return pd.DataFrame({
            "id": np.arange(t.n_nodes), "type": list(t.type), "named": t.named, "start": t.start, "end": t.end,
            "parent": t.parent, "depth": t.depth, "category": list(self.node_category), "is_error": t.is_error,
            "is_missing": t.is_missing, "n_tokens": self.alignment.counts(), "value": self.values,
        })


    def weakest_nodes(self, k: int = 5, named_only: bool = True) -> pd.DataFrame:
        """The ``k`` nodes with the lowest value (named nodes by default; ties broken by source order)."""
        nodes = self.node_frame()
        nodes = nodes[nodes["value"].notna() & (nodes["named"] | (not named_only))]
        nodes = nodes.sort_values(["value", "start"], kind="stable").head(k).copy()
        nodes["text"] = [self.tree.text(i) for i in nodes["id"]]
        return nodes[["id", "type", "category", "value", "n_tokens", "text"]]

    def node_tokens(self, node: int) -> pd.DataFrame:
        """The tokens bound to ``node`` with their scores (a slice of :meth:`token_frame`)."""
        return self.token_frame().iloc[self.alignment.tokens_of(node)]

    def _repr_html_(self) -> str:
        """Inline in a notebook: a summary line, the colored sequence view and the category strip
        (:func:`asc.viz.notebook.explanation_html`; static HTML, nothing fetched)."""
        return str(show(self, "html"))

    def complete_tree(self, **options: Any) -> go.Figure:
        """The complete AST (every node, the inspector's second tree): :func:`asc.viz.tree_figure` ``(self,
        "complete", **options)`` (``max_depth``, ``collapse_unary``, ``selected``, ...). Not ``.tree()``: that name
        is the syntax tree itself (:attr:`tree`)."""
        return show(self, "complete_tree", **options)

    def partial_tree(self, **options: Any) -> go.Figure:
        """The partial AST (named nodes, unary chains collapsed), the inspector's first tree:
        :func:`asc.viz.tree_figure` ``(self, "partial", collapse_unary=True, **options)``."""
        return show(self, "partial_tree", **options)

    def category_chart(self, **options: Any) -> go.Figure:
        """The inspector's bar per category with the confidence line: :func:`asc.viz.category_figure`
        ``(self.category_values, **options)``."""
        return show(self, "category_chart", **options)

    def features(self, sae: Any, bundle: ModelBundle, top: int = 5) -> Any:
        """The SAE latents of every node (issue 47): :func:`probes.sae.features` ``(sae, self, bundle, top)``, its
        :class:`probes.sae.NodeFeatures` (``.of(node)``: the node's ``top`` strongest latents). ``sae``: a
        :class:`probes.sae.SparseAutoencoder` of this explanation's model (``probes.sae.load_sae``); ``bundle``: the
        model, whose hidden states are read again (an explanation keeps none). asc never imports probes (imports
        point one way): the SAE object does the work (``sae.node_features``)."""
        node_features = getattr(sae, "node_features", None)
        if not callable(node_features):
            raise InputError(f"features() takes an SAE (probes.sae.load_sae(folder)), not {type(sae).__name__}")
        return node_features(self, bundle, top)


def check_source(source: str, language: str | None = None) -> str:
    """The snippet itself, or an :class:`InputError` (not text, invalid Unicode, empty, over
    :data:`MAX_SOURCE_CHARS` characters; given ``language``, a syntax tree deeper than
    :data:`asc.syntax.MAX_AST_DEPTH`: :class:`~asc.errors.TooDeepError`). Cheap (a parse, milliseconds): callers
    run it before loading a model; :func:`checked_tree` keeps the tree for the explanation."""
    if isinstance(source, str) and len(source) > MAX_SOURCE_CHARS:
        raise InputError(f"the snippet has {len(source):,} characters; at most {MAX_SOURCE_CHARS:,} are explained at "
                         "once: explain one function or a part of the file")
    encode_source(source)
    if not source.strip():
        raise InputError("the snippet is empty: paste or load some code first")
    if language is not None:
        parse(source, language)
    return source


def checked_tree(source: str, language: str = "python") -> SyntaxTree:
    """:func:`check_source` that keeps what it parsed: the snippet's syntax tree (``tree.source`` is the snippet),
    to give :func:`explain` and :func:`asc.depth.explain_layers` (``tree=``) so they do not parse it again."""
    return parse(check_source(source), language)


def _tree_of(source: str, language: str, tree: SyntaxTree | None) -> SyntaxTree:
    """``tree`` when it is ``source``'s in ``language`` (checked already), else ``source`` checked and parsed."""
    if tree is None:
        return checked_tree(source, language)
    if tree.source != source or tree.language != language:
        raise InputError("the syntax tree given is not the snippet's: give the tree checked_tree(source, language) "
                         "returned, or none")
    return tree


def explain_scored(bundle_info: dict, scores: TokenScores, language: str = "python", aggregate: str = "median",
                   options: AlignOptions | None = None, categories: CategoryMap | None = None,
                   tree: SyntaxTree | None = None) -> Explanation:
    """Build an :class:`Explanation` from token scores already computed for ``scores.source``."""
    check_aggregate(aggregate)
    cmap = categories or load_categories(language)
    tree = tree or parse(scores.source, language)
    al = align(tree, scores.start, scores.end, scores.special, options)
    values, concept_values, category_values = node_values(scores.prob, tree, al, cmap, aggregate)
    node_cat = tuple(cmap.category_of(t) for t in tree.type)
    return Explanation(model=bundle_info, tree=tree, scores=scores, alignment=al, aggregate=aggregate, values=values,
                       node_category=node_cat, concept_values=concept_values, category_values=category_values,
                       categories=cmap.categories)


def node_values(prob: np.ndarray, tree: SyntaxTree, alignment: Alignment, categories: CategoryMap,
                aggregate: str = "median") -> tuple[np.ndarray, dict[str, float], dict[str, float]]:
    """AsC-Eval's aggregation of token probabilities ``prob`` (shape ``(T,)``) over an aligned tree: the node
    values ``(N,)`` (theta of each node's tokens), then theta per node type and per category over node values
    (``concept_values``, ``category_values``; a category absent from the snippet is NaN)."""
    values = alignment.aggregate(prob, aggregate)
    node_cat = tuple(categories.category_of(t) for t in tree.type)
    type_names = sorted(set(tree.type))
    type_index = {name: k for k, name in enumerate(type_names)}
    per_type = aggregate_segments(values, np.array([type_index[t] for t in tree.type]), len(type_names), aggregate)
    concept_values = {name: float(per_type[k]) for k, name in enumerate(type_names) if not math.isnan(per_type[k])}
    cat_index = {c: k for k, c in enumerate(categories.categories)}
    cat_seg = np.array([cat_index.get(c, -1) if c else -1 for c in node_cat], dtype=np.int64)
    mask = cat_seg >= 0
    per_cat = aggregate_segments(values[mask], cat_seg[mask], len(categories.categories), aggregate)
    return values, concept_values, {c: float(per_cat[k]) for k, c in enumerate(categories.categories)}


def explain_many(bundle: ModelBundle, sources: Sequence[str], language: str = "python", aggregate: str = "median",
                 options: AlignOptions | None = None, categories: CategoryMap | None = None,
                 max_window: int | None = None, trees: Sequence[SyntaxTree] | None = None) -> list[Explanation]:
    """AsC-Eval for several snippets, scored in batched forward passes. Each text is parsed first (or its
    ``trees`` from :func:`checked_tree` taken), so a refused one (:func:`check_source`, a tree deeper than
    :data:`asc.syntax.MAX_AST_DEPTH`) never reaches the model."""
    if trees is not None and len(trees) != len(sources):
        raise InputError(f"{len(trees)} syntax trees for {len(sources)} snippets: give one per snippet, or none")
    trees = [_tree_of(src, language, None if trees is None else trees[k]) for k, src in enumerate(sources)]
    check_aggregate(aggregate)
    cmap = categories or load_categories(language)
    scored = score_texts(bundle, sources, max_window=max_window)
    alignments = [align(t, s.start, s.end, s.special, options) for s, t in zip(scored, trees, strict=True)]
    return explanations_of(bundle.summary(), trees, scored, alignments, [cmap] * len(trees), aggregate)[0]


def explanations_of(info: dict, trees: Sequence[SyntaxTree], scores: Sequence[TokenScores],
                    alignments: Sequence[Alignment], cmaps: Sequence[CategoryMap],
                    aggregate: str = "median") -> tuple[list[Explanation], BatchValues]:
    """The :class:`Explanation` of each aligned, scored snippet, as :func:`explain_scored` makes it, with the
    aggregation of all of them done at once (:func:`asc.aggregate.batch_values`), which it returns too."""
    got = batch_values([s.prob for s in scores], trees, alignments, cmaps, aggregate)
    out = []
    for f, (tree, s, al, cmap) in enumerate(zip(trees, scores, alignments, cmaps, strict=True)):
        per_type = got.per_type[f]
        out.append(Explanation(
            model=info, tree=tree, scores=s, alignment=al, aggregate=aggregate,
            values=got.values[got.bounds[f] : got.bounds[f + 1]],
            node_category=tuple(cmap.category_of(t) for t in tree.type),
            concept_values={name: float(per_type[k]) for k, name in enumerate(got.type_names)
                            if not np.isnan(per_type[k])},
            category_values={c: float(got.per_category[f, k]) for k, c in enumerate(cmap.categories)},
            categories=cmap.categories))
    return out, got


def explain(bundle: ModelBundle, source: str, language: str = "python", aggregate: str = "median",
            options: AlignOptions | None = None, categories: CategoryMap | None = None,
            max_window: int | None = None, tree: SyntaxTree | None = None) -> Explanation:
    """AsC-Eval for one snippet: one forward pass (or overlapping windows for long inputs); ``tree``: the snippet's
    syntax tree from :func:`checked_tree`, not parsed again."""
    return explain_many(bundle, [source], language, aggregate, options, categories, max_window,
                        None if tree is None else [tree])[0]


@dataclass(frozen=True)
class SnippetComparison:
    """Several models' AsC-Eval of one snippet on the shared tree. ``values`` has shape (M, N)."""

    models: tuple[str, ...]
    explanations: tuple[Explanation, ...]
    values: np.ndarray

    def difference(self, a: int = 0, b: int = 1) -> np.ndarray:
        """(N,) node values of model ``a`` minus model ``b`` (NaN where either has none)."""
        return self.values[a] - self.values[b]

    def disagreements(self, a: int = 0, b: int = 1, k: int = 15, named_only: bool = True) -> pd.DataFrame:
        """The ``k`` nodes with the largest |A - B|, with their category (``uncategorized`` when none lists the node),
        both values and the node's text."""
        import pandas as pd

        ex = self.explanations[0]
        t = ex.tree
        diff = self.difference(a, b)
        rows = [{"id": i, "type": t.type[i], "category": category_label(ex.node_category[i]),
                 self.models[a]: self.values[a, i],
                 self.models[b]: self.values[b, i], "difference": diff[i], "text": t.text(i, limit=60)}
                for i in range(t.n_nodes) if not np.isnan(diff[i]) and (t.named[i] or not named_only)]
        table = pd.DataFrame(rows)
        if table.empty:
            return table
        return table.reindex(table["difference"].abs().sort_values(ascending=False).index).head(k).reset_index(drop=True)


def compare_snippet(explanations: Sequence[Explanation], models: Sequence[str] | None = None) -> SnippetComparison:
    """Stack several models' explanations of the same source (same text, language) node by node."""
    if len(explanations) < 2:
        raise InputError("compare at least two models")
    first = explanations[0]
    for ex in explanations[1:]:
        if ex.source != first.source or ex.tree.language != first.tree.language:
            raise InputError("every model must explain the same text in the same language")
    names = tuple(models or (ex.model.get("name", f"model {i}") for i, ex in enumerate(explanations)))
    if len(set(names)) != len(names):
        names = tuple(f"{n} ({i + 1})" for i, n in enumerate(names))
    return SnippetComparison(models=names, explanations=tuple(explanations),
                             values=np.stack([ex.values for ex in explanations]))
