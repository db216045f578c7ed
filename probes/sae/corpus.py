"""An SAE's latent activations on a corpus, every token bound to its syntax node by AsC-Eval's alignment.

For each snippet: AsC-Eval's tokenization (:func:`asc.scores.encode`, truncated to ``max_tokens``), its tree-sitter
tree (:func:`asc.syntax.parse`) and AsC-Eval's token-node alignment (:func:`asc.align.align`, default options: a
token counts for every node its span overlaps, ancestors included). Each usable token
(:func:`probes.sae.activations.usable`) bound to some node gets:

* its **node**: the deepest node it is bound to (the leaf it lies in; for a token over several leaves, one of
  them), whose type is the token's **node type**;
* its **category**: the category (``assets/categories/<language>.json``) of that node or of its nearest categorized
  ancestor (``string_content`` inside a ``string`` is *Natural Language*, the ``for`` keyword of a
  ``for_statement`` is *Iteration*), or none.

**Departure from AsC-Eval.** AsC-Eval gives a token to every node it overlaps, so a token counts for its leaf and
for the module, the function and each block around it; for selectivity each token needs one node type and at most
one category, so the deepest node and the nearest categorized node are taken. Snippets whose tree is refused
(:class:`asc.errors.InputError`, e.g. deeper than :data:`asc.syntax.MAX_AST_DEPTH`) are skipped.

The activations are kept sparse (COO: token row, latent, value), as a TopK SAE's are. :func:`save_activations` and
:func:`load_activations` keep them in one ``.npz`` next to the SAE so ``enrich`` and ``show`` read the corpus once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from asc.align import align
from asc.atomic import write_atomic
from asc.concepts import load_categories
from asc.errors import InputError
from asc.syntax import SyntaxTree, parse
from probes.sae.activations import encode_snippets, padded, resid_post, usable
from probes.sae.model import SparseAutoencoder

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["CorpusActivations", "bound_nodes", "corpus_activations", "load_activations", "save_activations"]


@dataclass(frozen=True)
class CorpusActivations:
    """Latent activations on a corpus. Token arrays are (T,): the token's snippet, character span in it, its node's
    span, node type (index into ``node_types``) and category (index into ``categories``, -1: none). The activations
    are COO triples (nnz,): ``rows`` (token), ``cols`` (latent), ``values``."""

    sources: tuple[str, ...]
    categories: tuple[str, ...]
    node_types: tuple[str, ...]
    d_sae: int
    snippet: np.ndarray
    start: np.ndarray
    end: np.ndarray
    node_start: np.ndarray
    node_end: np.ndarray
    node_type: np.ndarray
    category: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray

    @property
    def n_tokens(self) -> int:
        """The number of tokens read."""
        return len(self.snippet)

    def matrix(self) -> object:
        """The (T, d_sae) activations as a scipy CSR matrix."""
        from scipy import sparse

        return sparse.csr_matrix((self.values, (self.rows, self.cols)), shape=(self.n_tokens, self.d_sae))


def bound_nodes(tree: SyntaxTree, start: np.ndarray, end: np.ndarray, special: np.ndarray,
                category_of: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
    """(T,) each token's deepest bound node (-1: none), and (T,) the node whose category the token takes: that
    node or its nearest ancestor with a category (-1: none). ``category_of``: each node's category or None."""
    al = align(tree, start, end, special)
    counts = al.hi - al.lo
    node_of = np.repeat(np.arange(al.n_nodes), counts)
    starts = np.repeat(al.lo, counts)
    offsets = np.arange(len(node_of)) - np.repeat(np.cumsum(counts) - counts, counts)
    token = al.order[starts + offsets] if len(node_of) else np.zeros(0, np.int64)
    deepest = np.full(len(start), -1, dtype=np.int64)
    if len(token):
        order = np.lexsort((tree.depth[node_of], token))  # by token, then depth: the last of each token is deepest
        last = np.r_[token[order][1:] != token[order][:-1], True]
        deepest[token[order][last]] = node_of[order][last]
    near = np.full(tree.n_nodes, -1, dtype=np.int64)
    for i in np.argsort(tree.depth, kind="stable"):
        p = tree.parent[i]
        near[i] = i if category_of[i] is not None else (near[p] if p >= 0 else -1)
    owner = np.where(deepest >= 0, near[np.maximum(deepest, 0)], -1)
    return deepest, owner


def corpus_activations(sae: SparseAutoencoder, bundle: ModelBundle, sources: Sequence[str], layer: int, *,
                       language: str = "python", max_tokens: int = 256, budget: int = 2048,
                       on_progress: Callable[[int, int], None] | None = None) -> CorpusActivations:
    """The SAE's activations at block ``layer`` on ``sources``, tokens bound to nodes (module doc)."""
    cmap = load_categories(language)
    categories = tuple(cmap.categories)
    cat_index = {c: i for i, c in enumerate(categories)}
    kept: list[tuple[str, SyntaxTree]] = []
    for src in sources:
        try:
            kept.append((src, parse(src, language)))
        except InputError:
            continue
    if not kept:
        raise InputError("no snippet of the corpus parses: give a corpus of Python code")
    encoded = encode_snippets(bundle, [s for s, _ in kept], max_tokens)
    types: dict[str, int] = {}
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("snippet", "start", "end", "node_start", "node_end",
                                                         "node_type", "category", "rows", "cols", "values")}
    n_rows = 0
    device = next(sae.parameters()).device
    i = 0
    while i < len(encoded):
        j = i + 1
        while j < len(encoded) and max(e.n_tokens for e in encoded[i : j + 1]) * (j + 1 - i) <= budget:
            j += 1
        ids, mask = padded(bundle, [e.ids for e in encoded[i:j]])
        states = resid_post(bundle, layer, ids, mask)
        for r, s in enumerate(range(i, j)):
            snip, tree = encoded[s], kept[s][1]
            node_cat = [cmap.category_of(t) for t in tree.type]
            deepest, owner = bound_nodes(tree, snip.start, snip.end, snip.special, node_cat)
            pick = np.flatnonzero(usable(snip.special) & (deepest >= 0))
            if not len(pick):
                continue
            with torch.inference_mode():
                acts = sae.encode(states[r, torch.from_numpy(pick)].to(device)).cpu()
            nz = torch.nonzero(acts > 0)
            node = deepest[pick]
            cols["snippet"].append(np.full(len(pick), s, dtype=np.int32))
            cols["start"].append(snip.start[pick])
            cols["end"].append(snip.end[pick])
            cols["node_start"].append(tree.start[node])
            cols["node_end"].append(tree.end[node])
            cols["node_type"].append(np.array([types.setdefault(tree.type[n], len(types)) for n in node], np.int32))
            cols["category"].append(np.array([cat_index[node_cat[o]] if o >= 0 else -1 for o in owner[pick]],
                                             np.int32))
            cols["rows"].append(nz[:, 0].numpy().astype(np.int64) + n_rows)
            cols["cols"].append(nz[:, 1].numpy().astype(np.int32))
            cols["values"].append(acts[nz[:, 0], nz[:, 1]].numpy().astype(np.float32))
            n_rows += len(pick)
        i = j
        if on_progress:
            on_progress(i, len(encoded))
    empty = {"rows": np.int64, "cols": np.int32, "values": np.float32}
    arrays = {k: np.concatenate(v) if v else np.zeros(0, empty.get(k, np.int64)) for k, v in cols.items()}
    return CorpusActivations(sources=tuple(s for s, _ in kept), categories=categories,
                             node_types=tuple(sorted(types, key=types.__getitem__)), d_sae=sae.cfg.d_sae, **arrays)


_ARRAYS = ("snippet", "start", "end", "node_start", "node_end", "node_type", "category", "rows", "cols", "values")


def save_activations(acts: CorpusActivations, path: str | Path, key: dict[str, object]) -> Path:
    """Write ``acts`` to ``path`` (``.npz``, atomically) with ``key`` (what they were computed from)."""
    meta = json.dumps({"key": key, "sources": acts.sources, "categories": acts.categories,
                       "node_types": acts.node_types, "d_sae": acts.d_sae})
    arrays = {name: getattr(acts, name) for name in _ARRAYS}
    return write_atomic(path, lambda tmp: np.savez_compressed(tmp, meta=np.array(meta), **arrays))


def load_activations(path: str | Path, key: dict[str, object]) -> CorpusActivations | None:
    """The activations saved at ``path`` for ``key``, or None (no file, another key, unreadable)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("key") != json.loads(json.dumps(key)):
                return None
            arrays = {name: data[name] for name in _ARRAYS}
    except (OSError, KeyError, ValueError):
        return None
    return CorpusActivations(sources=tuple(meta["sources"]), categories=tuple(meta["categories"]),
                             node_types=tuple(meta["node_types"]), d_sae=int(meta["d_sae"]), **arrays)
