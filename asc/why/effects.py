"""The effect of a corruption on every node and token: AsC-Eval of the clean and of the corrupted snippet, aligned.

:func:`effect` explains both texts (:func:`asc.explain.explain_many`, one batched call; a clean
:class:`~asc.explain.Explanation` already made can be given) and lines them up:

Nodes
    by :func:`asc.branching.treediff.ast_diff`, the tree diff branches use (top-down; children with equal type
    and text first, then by type within each stretch that differs). A clean node's corrupted value is the value
    of its counterpart; a node the corrupted tree lacks (a removed comment or docstring) has none (NaN), and so
    has its difference (corrupted - clean, in AsC-Eval's units: the ``aggregate`` of token probabilities).
Tokens
    a clean token lines up with the corrupted token that has the same text at the same span shifted by the edits
    before it (the sum of their length changes); a token that overlaps an edit, or whose shifted span the
    corrupted tokenization cuts differently, lines up with none (-1, difference NaN). Special tokens (BOS) never
    line up; tokens with no prediction have a NaN difference.
Later
    ``node_later`` marks the clean nodes that start at or after the first edit and are not wholly inside an edit
    (the replaced text itself: a renamed identifier, a swapped operator), i.e. the code whose prediction the
    corruption can change without being that code; ``token_later`` the tokens starting at or after the first
    edit. Everything before the first edit has the same prefix in both runs, so its differences are zero up to
    rounding: a check, not an effect. ``category_difference`` is the mean node difference over the later matched
    nodes of each category (NaN where the category has none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asc.align import AlignOptions
from asc.branching.treediff import TreeDiff, ast_diff
from asc.concepts import CategoryMap
from asc.errors import InputError
from asc.explain import Explanation, explain_many
from asc.models import ModelBundle
from asc.why.corrupt import Corruption

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Effect", "effect", "effect_of_explanations", "line_up_tokens"]


@dataclass(frozen=True)
class Effect:
    """A corruption's effect (rules in the module doc). Node arrays have shape ``(N,)`` over the clean tree, token
    arrays ``(T,)`` over the clean tokens; ``node_match``/``token_match`` index the corrupted tree/tokens (-1:
    none)."""

    corruption: Corruption
    clean: Explanation
    corrupted: Explanation
    diff: TreeDiff
    node_match: np.ndarray  # int64 (N,)
    node_clean: np.ndarray  # float64 (N,)
    node_corrupted: np.ndarray  # float64 (N,), NaN unmatched
    node_difference: np.ndarray  # float64 (N,) corrupted - clean
    node_later: np.ndarray  # bool (N,)
    token_match: np.ndarray  # int64 (T,)
    token_difference: np.ndarray  # float64 (T,) corrupted logprob - clean logprob
    token_later: np.ndarray  # bool (T,)
    category_difference: dict[str, float]

    def to_dict(self) -> dict:
        """Plain JSON-ready values: the corruption, per node and per token (None for NaN), per category."""
        def num(x: float) -> float | None:
            return None if math.isnan(x) else float(x)

        tree = self.clean.tree
        return {
            "corruption": self.corruption.to_dict(),
            "nodes": [{"id": i, "type": tree.type[i], "match": int(self.node_match[i]),
                       "clean": num(self.node_clean[i]), "corrupted": num(self.node_corrupted[i]),
                       "difference": num(self.node_difference[i]), "later": bool(self.node_later[i])}
                      for i in range(tree.n_nodes)],
            "tokens": [{"index": i, "match": int(self.token_match[i]), "difference": num(self.token_difference[i]),
                        "later": bool(self.token_later[i])} for i in range(len(self.token_match))],
            "categories": {c: num(v) for c, v in self.category_difference.items()},
        }

    def strongest(self, k: int = 10, named_only: bool = True) -> pd.DataFrame:
        """The ``k`` later nodes with the largest |difference|, with both values and their text."""
        import pandas as pd

        t, ex = self.clean.tree, self.clean
        rows = [{"id": i, "type": t.type[i], "category": ex.node_category[i], "clean": self.node_clean[i],
                 "corrupted": self.node_corrupted[i], "difference": self.node_difference[i], "text": t.text(i, 60)}
                for i in np.flatnonzero(self.node_later & ~np.isnan(self.node_difference)).tolist()
                if t.named[i] or not named_only]
        table = pd.DataFrame(rows)
        if table.empty:
            return table
        order = table["difference"].abs().sort_values(ascending=False, kind="stable").index
        return table.reindex(order).head(k).reset_index(drop=True)


def line_up_tokens(clean: Explanation, corrupted: Explanation, corruption: Corruption) -> np.ndarray:
    """(T_clean,) int64: each clean token's counterpart among the corrupted tokens (module doc), -1 for none."""
    a, b = clean.scores, corrupted.scores
    start, end, ok = corruption.map_spans(a.start, a.end)
    index = {(int(s), int(e)): j for j, (s, e) in enumerate(zip(b.start.tolist(), b.end.tolist(), strict=True))
             if not b.special[j]}
    out = np.full(a.n_tokens, -1, dtype=np.int64)
    src_a, src_b = clean.source, corrupted.source
    for i in np.flatnonzero(ok & ~a.special).tolist():
        j = index.get((int(start[i]), int(end[i])), -1)
        if j >= 0 and src_a[a.start[i]:a.end[i]] == src_b[b.start[j]:b.end[j]]:
            out[i] = j
    return out


def _inside_edits(corruption: Corruption, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """bool: spans of one character or more whose every character an edit replaces."""
    changed = np.concatenate([[0], np.cumsum(corruption.changed_mask())])
    return (end > start) & (changed[end] - changed[start] == end - start)


def effect_of_explanations(corruption: Corruption, clean: Explanation, corrupted: Explanation) -> Effect:
    """The :class:`Effect` from the two explanations already made (``clean`` of ``corruption.source``,
    ``corrupted`` of ``corruption.corrupted``)."""
    if clean.source != corruption.source or corrupted.source != corruption.corrupted:
        raise InputError("the explanations are not of the corruption's two texts: explain corruption.source and "
                         "corruption.corrupted")
    diff = ast_diff(clean.tree, corrupted.tree)
    match = diff.match_a
    corr_values = np.where(match >= 0, corrupted.values[np.maximum(match, 0)], np.nan)
    difference = corr_values - clean.values
    tree = clean.tree
    first = corruption.first_change
    later = (np.zeros(tree.n_nodes, dtype=bool) if first is None else
             (tree.start >= first) & ~_inside_edits(corruption, tree.start, tree.end))
    tokens = line_up_tokens(clean, corrupted, corruption)
    lp_b = corrupted.scores.logprob
    token_diff = np.where(tokens >= 0, lp_b[np.maximum(tokens, 0)], np.nan) - clean.scores.logprob
    token_later = (np.zeros(clean.scores.n_tokens, dtype=bool) if first is None
                   else (clean.scores.start >= first) & ~clean.scores.special)
    cats = {}
    for c in clean.categories:
        picked = later & ~np.isnan(difference) & np.array([cat == c for cat in clean.node_category], dtype=bool)
        cats[c] = float(difference[picked].mean()) if picked.any() else math.nan
    return Effect(corruption=corruption, clean=clean, corrupted=corrupted, diff=diff, node_match=match,
                  node_clean=clean.values, node_corrupted=corr_values, node_difference=difference, node_later=later,
                  token_match=tokens, token_difference=token_diff, token_later=token_later, category_difference=cats)


def effect(bundle: ModelBundle, corruption: Corruption, aggregate: str = "median", options: AlignOptions | None = None,
           categories: CategoryMap | None = None, max_window: int | None = None,
           clean: Explanation | None = None) -> Effect:
    """The effect of ``corruption`` under ``bundle`` (module doc): both texts explained in one batched call, or only
    the corrupted one when ``clean`` (an explanation of ``corruption.source``) is given."""
    if clean is not None:
        aggregate = clean.aggregate
    texts = [corruption.corrupted] if clean is not None else [corruption.source, corruption.corrupted]
    made = explain_many(bundle, texts, corruption.language, aggregate, options, categories, max_window)
    return effect_of_explanations(corruption, clean if clean is not None else made[0], made[-1])
