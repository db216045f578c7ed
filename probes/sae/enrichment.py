"""Syntax enrichment of SAE latents: where each latent fires, by syntax category and by node type.

Given a (T, L) activation matrix over tokens (a latent *fires* on a token where its activation is above 0), each
token's snippet, category (-1: none) and node type (:mod:`probes.sae.corpus` binds them), :func:`enrich` computes,
for every latent ``l`` and category ``c`` (and likewise for node types):

* **firing rate** ``fires(l, c) / tokens(c)`` (the share of category-``c`` tokens it fires on: its *recall* of c) and
  **mean activation** ``sum act(l, c) / tokens(c)`` (zeros included: the mean over all of c's tokens);
* **precision** ``fires(l, c) / fires(l)`` (of the tokens it fires on, the share in c; tokens of no category count
  in the denominator) and **F1**, their harmonic mean;
* its **best** category: the highest F1 (-1 for a latent that never fires), with that category's precision and
  recall and their **bootstrap intervals over snippets** (tokens of one snippet are not independent): resamples of
  snippets with :func:`asc.corpus.bootstrap.snippet_weights` (multinomial, or Poisson for 10,000 snippets and more),
  each resample's counts the weighted sums of per-snippet counts, percentile intervals at ``level``; the best
  category is chosen once on the whole corpus (the interval is conditional on that choice);
* for every category, its latents **ranked** by F1 (ties by latent index).

:class:`Enrichment` holds the result as numpy arrays (shapes on the class), with :meth:`Enrichment.to_dict`, a long
table (:meth:`Enrichment.to_frame`), CSV/JSON export (:meth:`Enrichment.export`), ``_repr_html_`` for notebooks and
:meth:`Enrichment.label`, a name derived from the best node type and category (no language model involved).

**Labels need support.** F1 rewards recall, and a rare node type is easy to recall: a latent that fires on both
tokens of a type seen twice has recall 1 there and can beat the type it fires on 300 times. A label is a claim a
reader takes at face value, so a node type or category names a latent only when the latent fires on at least
``LABEL_MIN_TOKENS`` of its tokens; among those the best F1 wins (the next best when the best lacks support). A
latent that fires on fewer tokens than that in all is labelled ``rare`` with its count; one that fires more often
but on fewer than that of any single node type is ``scattered``. The ``best_*`` fields and their intervals stay
the plain best F1 (what the numbers say); only the name asks for support.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.atomic import write_atomic
from asc.corpus.bootstrap import snippet_weights
from asc.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LABEL_MIN_TOKENS", "Enrichment", "enrich", "export_result"]

LABEL_MIN_TOKENS = 5
"""Tokens of a node type or category a latent must fire on before they can name it (:meth:`Enrichment.label`)."""


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), np.nan)


def _f1(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        f = 2 * p * r / (p + r)
    out: np.ndarray = np.nan_to_num(f, nan=0.0)
    return out


@dataclass(frozen=True)
class Enrichment:
    """Latents (L) against categories (C) and node types (Y) (module doc). Per latent: ``fires`` (L,) tokens fired
    on; ``rate_*``, ``mean_*``, ``precision_*``, ``f1_*`` are (L, C) or (L, Y); ``best_*`` (L,) the index of the
    best category or type (-1: never fires); ``best_*_precision`` and ``best_*_recall`` (L,), their intervals
    ``*_ci`` (L, 2); ``ranking`` (C, L) the latents of each category, best first. ``tokens_*`` (C,) or (Y,): tokens
    of each."""

    categories: tuple[str, ...]
    node_types: tuple[str, ...]
    n_snippets: int
    n_tokens: int
    tokens_category: np.ndarray
    tokens_type: np.ndarray
    fires: np.ndarray
    rate_category: np.ndarray
    mean_category: np.ndarray
    precision_category: np.ndarray
    f1_category: np.ndarray
    rate_type: np.ndarray
    mean_type: np.ndarray
    precision_type: np.ndarray
    f1_type: np.ndarray
    best_category: np.ndarray
    best_category_precision: np.ndarray
    best_category_recall: np.ndarray
    best_category_precision_ci: np.ndarray
    best_category_recall_ci: np.ndarray
    best_type: np.ndarray
    best_type_precision: np.ndarray
    best_type_recall: np.ndarray
    best_type_precision_ci: np.ndarray
    best_type_recall_ci: np.ndarray
    ranking: np.ndarray
    n_boot: int
    level: float

    @property
    def n_latents(self) -> int:
        """L, the SAE's width."""
        return len(self.fires)

    def _supported(self, latent: int, kind: str, min_tokens: int) -> int:
        """The node type or category (``kind``) of best F1 among those ``latent`` fires on ``min_tokens`` times, or -1."""
        rate, tokens, f1 = (getattr(self, f"{name}_{kind}") for name in ("rate", "tokens", "f1"))
        fired = np.rint(np.nan_to_num(rate[latent]) * tokens)
        score = np.where(fired >= max(min_tokens, 1), f1[latent], -1.0)
        return int(np.argmax(score)) if len(score) and score.max() >= 0 else -1

    def label(self, latent: int, min_tokens: int = LABEL_MIN_TOKENS) -> str:
        """A name for ``latent`` from its best node type and category by F1 among those it fires on at least
        ``min_tokens`` times (module doc), qualified by the type's precision ("mostly" from 0.5, "partly" below,
        nothing from 0.8): e.g. ``"mostly string_content tokens (Natural Language)"``; ``"rare: fires on 3 tokens"``
        and ``"scattered: ..."`` when no node type has the support."""
        fires = int(self.fires[latent])
        if fires == 0:
            return "never fires on this corpus"
        typ, cat = self._supported(latent, "type", min_tokens), self._supported(latent, "category", min_tokens)
        where = f" ({self.categories[cat]})" if cat >= 0 else ""
        if typ < 0 and fires < min_tokens:
            return f"rare: fires on {fires} token{'s' if fires > 1 else ''}"
        if typ < 0:
            return f"scattered: {fires} tokens, under {min_tokens} of any node type{where}"
        p = float(self.precision_type[latent, typ])
        qual = "" if p >= 0.8 else "mostly " if p >= 0.5 else "partly "
        return f"{qual}{self.node_types[typ]} tokens{where}"

    def latent_dict(self, latent: int) -> dict[str, Any]:
        """One latent's entry of :meth:`to_dict`."""
        def num(x: float) -> float | None:
            return None if not math.isfinite(float(x)) else round(float(x), 6)

        bc, bt = int(self.best_category[latent]), int(self.best_type[latent])
        return {"latent": latent, "fires": int(self.fires[latent]),
                "firing_rate": num(self.fires[latent] / max(self.n_tokens, 1)), "label": self.label(latent),
                "best_category": self.categories[bc] if bc >= 0 else None,
                "category_precision": num(self.best_category_precision[latent]),
                "category_precision_ci": [num(v) for v in self.best_category_precision_ci[latent]],
                "category_recall": num(self.best_category_recall[latent]),
                "category_recall_ci": [num(v) for v in self.best_category_recall_ci[latent]],
                "best_node_type": self.node_types[bt] if bt >= 0 else None,
                "type_precision": num(self.best_type_precision[latent]),
                "type_precision_ci": [num(v) for v in self.best_type_precision_ci[latent]],
                "type_recall": num(self.best_type_recall[latent]),
                "type_recall_ci": [num(v) for v in self.best_type_recall_ci[latent]]}

    def ranked(self, category: str, top: int = 10) -> list[dict[str, Any]]:
        """The ``top`` latents of ``category`` by F1 (those with F1 above 0), with F1, precision and recall."""
        if category not in self.categories:
            raise InputError(f"unknown category {category!r}: one of {', '.join(self.categories)}")
        c = self.categories.index(category)
        out = []
        for latent in self.ranking[c][:top]:
            if self.f1_category[latent, c] <= 0:
                break
            out.append({"latent": int(latent), "f1": round(float(self.f1_category[latent, c]), 6),
                        "precision": round(float(self.precision_category[latent, c]), 6),
                        "recall": round(float(self.rate_category[latent, c]), 6)})
        return out

    def to_dict(self, top: int = 10) -> dict[str, Any]:
        """The JSON layout of ``python -m probes sae enrich --json``: counts, every latent's entry, and each
        category's ``top`` latents."""
        return {"n_snippets": self.n_snippets, "n_tokens": self.n_tokens, "n_latents": self.n_latents,
                "n_boot": self.n_boot, "level": self.level,
                "tokens_per_category": dict(zip(self.categories, self.tokens_category.tolist(), strict=True)),
                "tokens_per_node_type": dict(zip(self.node_types, self.tokens_type.tolist(), strict=True)),
                "latents": [self.latent_dict(i) for i in range(self.n_latents)],
                "categories": {c: self.ranked(c, top) for c in self.categories}}

    def to_frame(self) -> pd.DataFrame:
        """One row per (latent, category or node type) where the latent fires: kind, name, tokens, firing rate,
        mean activation, precision, F1."""
        import pandas as pd

        parts = []
        for kind, names, tokens, rate, mean, prec, f1 in (
                ("category", self.categories, self.tokens_category, self.rate_category, self.mean_category,
                 self.precision_category, self.f1_category),
                ("node_type", self.node_types, self.tokens_type, self.rate_type, self.mean_type,
                 self.precision_type, self.f1_type)):
            lat, col = np.nonzero(np.nan_to_num(rate) > 0)
            parts.append(pd.DataFrame({"latent": lat, "kind": kind, "name": np.asarray(names, dtype=object)[col],
                                       "tokens": tokens[col], "firing_rate": rate[lat, col],
                                       "mean_activation": mean[lat, col], "precision": prec[lat, col],
                                       "f1": f1[lat, col]}))
        return pd.concat(parts, ignore_index=True)

    def export(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` (``.json``) or :meth:`to_frame` (``.csv``) to ``path``, atomically."""
        return export_result(path, self.to_dict, self.to_frame)

    def _repr_html_(self) -> str:
        rows = []
        for c in self.categories:
            best = self.ranked(c, 3)
            cells = ", ".join(f"#{b['latent']} (P {b['precision']:.2f}, R {b['recall']:.2f})" for b in best) or "-"
            rows.append(f"<tr><td>{html.escape(c)}</td><td>{html.escape(cells)}</td></tr>")
        head = (f"<p>{self.n_latents} latents on {self.n_tokens:,} tokens of {self.n_snippets} snippets "
                f"({int((self.fires > 0).sum())} fire)</p>")
        return head + "<table><tr><th>category</th><th>top latents by F1</th></tr>" + "".join(rows) + "</table>"


def export_result(path: str | Path, to_dict: Callable[[], dict[str, Any]], to_frame: Callable[[], pd.DataFrame]) -> Path:
    """Write a result to ``path`` atomically: ``to_dict()`` as JSON for ``.json``, ``to_frame()`` as CSV otherwise."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        text = json.dumps(to_dict(), indent=1)
        return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    frame = to_frame()
    return write_atomic(path, lambda tmp: frame.to_csv(tmp, index=False))


def _counts(rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, groups: np.ndarray, n_groups: int,
            n_latents: int) -> np.ndarray:
    """(L, G): for entries (row, col, weight), sum the weights per (col, group of the row); rows of group -1 skip."""
    g = groups[rows]
    keep = g >= 0
    flat = cols[keep].astype(np.int64) * n_groups + g[keep]
    return np.bincount(flat, weights=weights[keep], minlength=n_latents * n_groups).reshape(n_latents, n_groups)


def _side(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, groups: np.ndarray, n_groups: int, n_latents: int,
          fires: np.ndarray) -> dict[str, np.ndarray]:
    tokens = np.bincount(groups[groups >= 0], minlength=n_groups).astype(np.float64)
    fired = _counts(rows, cols, np.ones(len(rows)), groups, n_groups, n_latents)
    summed = _counts(rows, cols, vals.astype(np.float64), groups, n_groups, n_latents)
    rate = _div(fired, tokens[None, :])
    precision = _div(fired, fires[:, None])
    f1 = _f1(np.nan_to_num(precision), np.nan_to_num(rate))
    best = np.where((fires > 0) & (f1.max(axis=1, initial=0) > 0), np.argmax(f1, axis=1) if n_groups else -1, -1)
    pick = np.maximum(best, 0)
    at = np.arange(n_latents)
    return {"tokens": tokens.astype(np.int64), "rate": rate, "mean": _div(summed, tokens[None, :]),
            "precision": precision, "f1": f1, "best": best.astype(np.int64),
            "best_precision": np.where(best >= 0, precision[at, pick] if n_groups else np.nan, np.nan),
            "best_recall": np.where(best >= 0, rate[at, pick] if n_groups else np.nan, np.nan)}


def _intervals(rows: np.ndarray, cols: np.ndarray, snippet: np.ndarray, groups: np.ndarray, best: np.ndarray,
               n_snippets: int, n_latents: int, n_boot: int, seed: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """(L, 2) bootstrap intervals of each latent's precision and recall for its ``best`` group (module doc)."""
    s = snippet[rows]
    hit = (best[cols] >= 0) & (groups[rows] == best[cols])
    fires_s = np.bincount(s * n_latents + cols, minlength=n_snippets * n_latents).reshape(n_snippets, n_latents)
    best_s = np.bincount(s[hit] * n_latents + cols[hit], minlength=n_snippets * n_latents).reshape(n_snippets, n_latents)
    n_groups = int(max(groups.max(initial=-1), best.max(initial=-1))) + 1
    per = np.zeros((n_snippets, max(n_groups, 1)))
    ok = groups >= 0
    np.add.at(per, (snippet[ok], groups[ok]), 1)
    tokens_s = np.where(best[None, :] >= 0, per[:, np.maximum(best, 0)], 0)
    draws_p, draws_r = [], []
    for w in snippet_weights(n_snippets, n_boot, seed, dtype=np.float64):
        b = w.T @ best_s
        draws_p.append(_div(b, w.T @ fires_s))
        draws_r.append(_div(b, w.T @ tokens_s))
    q = [100 * (1 - level) / 2, 100 * (1 + level) / 2]

    def interval(draws: list[np.ndarray]) -> np.ndarray:
        stacked = np.concatenate(draws)
        out = np.full((n_latents, 2), np.nan)
        finite = np.isfinite(stacked).any(axis=0) & (best >= 0)
        if finite.any():
            out[finite] = np.nanpercentile(stacked[:, finite], q, axis=0).T
        return out

    return interval(draws_p), interval(draws_r)


def enrich(acts: Any, snippet: np.ndarray, category: np.ndarray, node_type: np.ndarray,
           categories: tuple[str, ...], node_types: tuple[str, ...], *, n_boot: int = 500, seed: int = 0,
           level: float = 0.95) -> Enrichment:
    """The :class:`Enrichment` of ``acts`` (T, L): a numpy array or a scipy sparse matrix; ``snippet`` (T,) each
    token's snippet (0..S-1), ``category`` (T,) its category index (-1: none), ``node_type`` (T,) its node type
    index (-1: none), ``categories`` and ``node_types`` their names (module doc)."""
    from scipy import sparse

    coo = sparse.coo_matrix(acts)
    n_tokens, n_latents = coo.shape
    snippet, category, node_type = (np.asarray(a, dtype=np.int64) for a in (snippet, category, node_type))
    if not len(snippet) == len(category) == len(node_type) == n_tokens:
        raise InputError(f"{n_tokens} activation rows but {len(snippet)} snippets, {len(category)} categories and "
                         f"{len(node_type)} node types: give one of each per token")
    if n_tokens == 0:
        raise InputError("no token to enrich: the corpus gave no usable token")
    on = coo.data > 0
    rows, cols, vals = coo.row[on].astype(np.int64), coo.col[on].astype(np.int64), coo.data[on]
    fires = np.bincount(cols, minlength=n_latents).astype(np.float64)
    cat = _side(rows, cols, vals, category, len(categories), n_latents, fires)
    typ = _side(rows, cols, vals, node_type, len(node_types), n_latents, fires)
    n_snippets = int(snippet.max()) + 1
    cat_p, cat_r = _intervals(rows, cols, snippet, category, cat["best"], n_snippets, n_latents, n_boot, seed, level)
    typ_p, typ_r = _intervals(rows, cols, snippet, node_type, typ["best"], n_snippets, n_latents, n_boot, seed, level)
    ranking = np.argsort(-cat["f1"].T, axis=1, kind="stable") if len(categories) else np.zeros((0, n_latents), int)
    return Enrichment(
        categories=tuple(categories), node_types=tuple(node_types), n_snippets=n_snippets, n_tokens=n_tokens,
        tokens_category=cat["tokens"], tokens_type=typ["tokens"], fires=fires.astype(np.int64),
        rate_category=cat["rate"], mean_category=cat["mean"], precision_category=cat["precision"],
        f1_category=cat["f1"], rate_type=typ["rate"], mean_type=typ["mean"], precision_type=typ["precision"],
        f1_type=typ["f1"], best_category=cat["best"], best_category_precision=cat["best_precision"],
        best_category_recall=cat["best_recall"], best_category_precision_ci=cat_p, best_category_recall_ci=cat_r,
        best_type=typ["best"], best_type_precision=typ["best_precision"], best_type_recall=typ["best_recall"],
        best_type_precision_ci=typ_p, best_type_recall_ci=typ_r, ranking=ranking, n_boot=n_boot, level=level)
