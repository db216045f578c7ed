"""Corpus attribution for one snippet: a seeded sample of ``k`` target nodes stratified by category, each explained
by gradient x input, stored as attribution mass per source category and per AST distance from the target.

**Targets.** A candidate is a node of a category (the snippet's category mapping, :mod:`asc.concepts`) with a
predicted token inside the model's context and at least one attributed token before it; its target is the node's
mean log-probability over its predicted tokens (:func:`asc.why.targets.node_target`). The sample is stratified by
category: the snippet's categories with candidates are visited in a seeded random order, round-robin, each visit
drawing one node of that category not drawn yet (uniformly), until ``k`` nodes are drawn or none is left (``k`` at
least the number of candidates: every candidate). A snippet's rare categories get targets as often as its common
ones. The random stream is ``numpy.random.default_rng((seed, crc32(snippet id)))``: the sample of a snippet does not
depend on the order, the chunking or a resumed run.

**Sources.** Each target's token attributions (gradient x input, :func:`asc.why.attribute.attribute`, ``"grad"``:
one forward and one backward pass over the text up to the target) are aggregated by the inspector's rule
(:func:`asc.why.attribute.aggregate`): per source category the signed sum over the prompt tokens bound to one of its
nodes (``attribution``) and those tokens' absolute sum over all prompt tokens' (``share``; categories overlap where
nodes nest, so shares need not add up to 1; NaN where no prompt token is bound to the category).

**Distance.** A prompt token's node is the deepest node AsC-Eval binds it to (ties, a token such as ``"):"`` spanning
two leaves: the first in tree order). Its distance from the target is the number of edges on the tree path between
that node and the target node, ``depth(a) + depth(t) - 2 depth(lowest common ancestor)``: a leaf beside the target
under the same parent is at 2, a token inside the target (a snippet whose first token it covers) at its depth below
it. Stored per whole distance (``attribution`` signed, ``share`` of the absolute total); the shares of a target's
distances add up to 1 unless a token is bound to no node (whitespace with ``--whitespace skip``: left out).

:func:`attribute_snippet` returns the rows of :data:`ROW_COLUMNS` (the ``attribution/`` table of a run,
:mod:`asc.why.corpus_run`): per target, one row per category of the mapping (``kind`` ``"category"``) and one per
distance present (``kind`` ``"distance"``, ``source`` the distance as text).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from asc.errors import InputError
from asc.explain import Explanation
from asc.models import ModelBundle
from asc.syntax import SyntaxTree
from asc.why.attribute import attribute
from asc.why.targets import node_target

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_K", "MAX_K", "ROW_COLUMNS", "attribute_snippet", "candidate_targets", "node_distances",
           "sample_targets", "snippet_rng", "target_rows", "token_nodes"]

DEFAULT_K = 8
# target nodes per snippet at most (a gradient pass each): twice the candidates of the richest 60-line function
# (eval's default longest) of 400 stdlib ones, 244; above a snippet's candidates k takes them all anyway
MAX_K = 512
ROW_COLUMNS = ["snippet_id", "target", "target_type", "target_category", "target_value", "abs_total", "kind", "source",
               "attribution", "share"]


def snippet_rng(seed: int, snippet_id: str) -> np.random.Generator:
    """The snippet's own random stream: ``(seed, crc32 of its id)`` (module doc)."""
    return np.random.default_rng((int(seed), zlib.crc32(str(snippet_id).encode("utf-8"))))


def candidate_targets(bundle: ModelBundle, explanation: Explanation) -> dict[str, list[int]]:
    """Per category, in the mapping's order, the nodes that can be targets (module doc), in tree order."""
    ex = explanation
    s = ex.scores
    predicted = ~np.isnan(s.logprob)
    attributed_before = np.concatenate([[0], np.cumsum(~s.special)])  # attributable tokens before each index
    out: dict[str, list[int]] = {c: [] for c in ex.categories}
    for node, cat in enumerate(ex.node_category):
        if cat is None or cat not in out:
            continue
        toks = ex.alignment.tokens_of(node)
        hits = toks[predicted[toks]]
        if len(hits) and hits[-1] < bundle.context_length and attributed_before[hits[0]] > 0:
            out[cat].append(node)
    return {c: nodes for c, nodes in out.items() if nodes}


def sample_targets(candidates: Mapping[str, Sequence[int]], k: int, rng: np.random.Generator) -> list[int]:
    """``k`` nodes stratified by category (module doc), in the order drawn; every candidate when there are fewer."""
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k={k!r}: give the number of target nodes per snippet, at least 1 (default {DEFAULT_K})")
    pools = {c: list(nodes) for c, nodes in candidates.items() if len(nodes)}
    order = [list(pools)[i] for i in rng.permutation(len(pools))]
    picked: list[int] = []
    while len(picked) < k and order:
        for cat in list(order):
            if len(picked) == k:
                break
            pool = pools[cat]
            picked.append(int(pool.pop(int(rng.integers(len(pool))))))
            if not pool:
                order.remove(cat)
    return picked


def token_nodes(explanation: Explanation) -> np.ndarray:
    """int64 (T,): each token's deepest bound node (ties: the first in tree order), -1 for a token bound to none."""
    al, tree = explanation.alignment, explanation.tree
    out = np.full(explanation.scores.n_tokens, -1, dtype=np.int64)
    # shallow first, and within a depth the last node first, so the deepest (then the first) node writes last
    for node in np.lexsort((-np.arange(tree.n_nodes), tree.depth)).tolist():
        out[al.tokens_of(node)] = node
    return out


def node_distances(tree: SyntaxTree, target: int) -> np.ndarray:
    """int64 (N,): the tree path length (edges) from every node to ``target`` (module doc)."""
    on_path = np.zeros(tree.n_nodes, dtype=bool)
    a = int(target)
    while a >= 0:
        on_path[a] = True
        a = int(tree.parent[a])
    lca_depth = np.zeros(tree.n_nodes, dtype=np.int64)
    parent, depth = tree.parent.tolist(), tree.depth.tolist()
    for n in range(tree.n_nodes):  # pre-order: a parent's entry is set before its children's
        lca_depth[n] = depth[n] if on_path[n] else lca_depth[parent[n]]
    return tree.depth + tree.depth[target] - 2 * lca_depth


def target_rows(snippet_id: str, explanation: Explanation, node: int, token_attr: np.ndarray,
                category_attr: Mapping[str, float], category_share: Mapping[str, float], value: float,
                nodes_of_tokens: np.ndarray | None = None) -> list[tuple]:
    """The :data:`ROW_COLUMNS` rows of one target node's attribution (module doc)."""
    ex = explanation
    has = ~np.isnan(token_attr)
    abs_total = float(np.abs(token_attr[has]).sum())
    head = (str(snippet_id), int(node), ex.tree.type[node], ex.node_category[node], float(value), abs_total)
    rows = [(*head, "category", cat, float(category_attr[cat]), float(category_share[cat])) for cat in ex.categories]
    owner = token_nodes(ex) if nodes_of_tokens is None else nodes_of_tokens
    keep = has & (owner >= 0)
    dist = node_distances(ex.tree, node)[owner[keep]]
    values = token_attr[keep]
    for d in np.unique(dist).tolist():
        at = values[dist == d]
        share = float(np.abs(at).sum() / abs_total) if abs_total > 0 else math.nan
        rows.append((*head, "distance", str(d), float(at.sum()), share))
    return rows


def attribute_snippet(bundle: ModelBundle, explanation: Explanation, snippet_id: str, k: int = DEFAULT_K,
                      seed: int = 0) -> pd.DataFrame:
    """The ``attribution/`` rows of one snippet (:data:`ROW_COLUMNS`): ``k`` sampled target nodes (module doc),
    each by gradient x input on ``explanation``'s text. A snippet without candidates gives no rows."""
    import pandas as pd

    ex = explanation
    picked = sample_targets(candidate_targets(bundle, ex), k, snippet_rng(seed, snippet_id))
    owner = token_nodes(ex)
    rows: list[tuple] = []
    for node in picked:
        target = node_target(bundle, ex, node)
        got = attribute(bundle, ex.source, target, "grad", explanation=ex)
        rows += target_rows(snippet_id, ex, node, got.token_attr, got.category_attr, got.category_share, got.value,
                            owner)
    frame = pd.DataFrame(rows, columns=ROW_COLUMNS)
    return frame.astype({"target": np.int32, "target_value": np.float64, "abs_total": np.float64,
                         "attribution": np.float64, "share": np.float64})
