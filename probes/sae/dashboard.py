"""Feature dashboards, offline: one latent's top contexts, histogram, categories and label; a snippet's nodes' latents.

:func:`latent_card` gathers, for latent ``I`` of an SAE on a corpus (:class:`probes.sae.corpus.CorpusActivations`
and its :class:`probes.sae.enrichment.Enrichment`): the ``top`` tokens where it is most active, each with its source
line and the node it is bound to highlighted (``[[...]]`` around the node's part of the line, the token's own text
named beside it), the histogram of its non-zero activations, the categories and node types it fires on (firing rate,
precision, tokens fired on), and the label :meth:`probes.sae.enrichment.Enrichment.label` derives from the enrichment:
the field's dashboards (Neuronpedia, SAELens's) show the same parts, with a label written by a language model; here
the label is a rule on the syntax, and nothing is fetched.

:func:`features` is what the inspector's Features view will call: for an :class:`asc.explain.Explanation` (its
tokens, tree and alignment) the SAE's activations at its layer on the explanation's own token ids, and per node the
``top`` latents with the largest activation on any usable token bound to it (AsC-Eval's binding: a node's tokens
include its descendants'). asc's classes get no method for it (asc never imports probes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from asc.errors import InputError
from probes.sae.activations import padded, resid_post, usable
from probes.sae.corpus import CorpusActivations
from probes.sae.enrichment import Enrichment
from probes.sae.model import SparseAutoencoder, check_sae_for

if TYPE_CHECKING:
    from asc.explain import Explanation
    from asc.models import ModelBundle

__all__ = ["TOKEN_LATENTS", "NodeFeatures", "check_latent", "features", "latent_card", "render_card"]


def check_latent(latent: int, d_sae: int) -> int:
    """``latent`` when it is one of the SAE's ``d_sae`` latents, else an InputError naming the range."""
    if not 0 <= latent < d_sae:
        raise InputError(f"latent {latent} is out of range: this SAE has {d_sae} latents (0 to {d_sae - 1})")
    return latent


def _context(acts: CorpusActivations, row: int, width: int = 100) -> dict[str, Any]:
    s = int(acts.snippet[row])
    src = acts.sources[s]
    t0, t1 = int(acts.start[row]), int(acts.end[row])
    n0, n1 = int(acts.node_start[row]), int(acts.node_end[row])
    line0 = src.rfind("\n", 0, t0) + 1
    line1 = src.find("\n", t1)
    line1 = len(src) if line1 < 0 else line1
    a = max(line0, n0)
    b = max(a, min(line1, n1))
    shown = src[line0:a] + "[[" + src[a:b] + "]]" + src[b:line1]
    return {"snippet": s, "line": src.count("\n", 0, t0) + 1, "token": src[t0:t1],
            "token_span": [t0, t1], "node_span": [n0, n1], "node_type": acts.node_types[acts.node_type[row]],
            "category": acts.categories[acts.category[row]] if acts.category[row] >= 0 else None,
            "text": shown.strip()[:width * 2]}


def latent_card(acts: CorpusActivations, enrichment: Enrichment, latent: int, *, top: int = 10,
                bins: int = 20) -> dict[str, Any]:
    """The dashboard of ``latent`` (module doc) as a dict: ``label``, ``contexts`` (best first, with their
    ``activation``), ``histogram`` (``edges``, ``counts``), ``categories`` and ``node_types`` it fires on."""
    check_latent(latent, acts.d_sae)
    mine = acts.cols == latent
    rows, vals = acts.rows[mine], acts.values[mine]
    order = np.argsort(-vals, kind="stable")[:top]
    contexts = [{"activation": round(float(vals[i]), 6), **_context(acts, int(rows[i]))} for i in order]
    counts, edges = np.histogram(vals, bins=bins) if len(vals) else (np.zeros(0, int), np.zeros(0))

    def table(names: tuple[str, ...], rate: np.ndarray, prec: np.ndarray, tokens: np.ndarray) -> list[dict[str, Any]]:
        fired = np.flatnonzero(np.nan_to_num(rate[latent]) > 0)
        fired = fired[np.argsort(-np.nan_to_num(prec[latent, fired]), kind="stable")]
        return [{"name": names[j], "firing_rate": round(float(rate[latent, j]), 6),
                 "precision": round(float(prec[latent, j]), 6), "tokens": int(tokens[j])} for j in fired]

    return {"latent": latent, "label": enrichment.label(latent), "fires": int(enrichment.fires[latent]),
            "n_tokens": acts.n_tokens, "summary": enrichment.latent_dict(latent), "contexts": contexts,
            "histogram": {"edges": [round(float(e), 6) for e in edges], "counts": counts.tolist()},
            "categories": table(enrichment.categories, enrichment.rate_category, enrichment.precision_category,
                                enrichment.tokens_category),
            "node_types": table(enrichment.node_types, enrichment.rate_type, enrichment.precision_type,
                                enrichment.tokens_type)}


def render_card(card: dict[str, Any], bar_width: int = 40) -> str:
    """The dashboard as text: label, contexts with the node in ``[[...]]``, histogram bars, categories, types."""
    s = card["summary"]
    lines = [f"latent {card['latent']}: {card['label']}",
             f"fires on {card['fires']:,} of {card['n_tokens']:,} tokens"
             + (f"; best category {s['best_category']} (precision {s['category_precision']:.2f}, recall "
                f"{s['category_recall']:.2f})" if s["best_category"] else ""), "", "top contexts:"]
    for c in card["contexts"]:
        lines.append(f"  {c['activation']:8.3f}  snippet {c['snippet']} line {c['line']}  {c['node_type']}"
                     f"  token {c['token']!r}:  {c['text']}")
    counts = card["histogram"]["counts"]
    if counts:
        lines += ["", "activation histogram:"]
        edges, most = card["histogram"]["edges"], max(counts) or 1
        for k, n in enumerate(counts):
            lines.append(f"  {edges[k]:8.3f}-{edges[k + 1]:<8.3f} {'#' * math.ceil(bar_width * n / most):<{bar_width}} {n}")
    for key in ("categories", "node_types"):
        lines += ["", f"{key.replace('_', ' ')} it fires on (precision, firing rate):"]
        lines += [f"  {r['name']:<28} {r['precision']:.3f}  {r['firing_rate']:.3f}" for r in card[key][:12]] or ["  -"]
    return "\n".join(lines)


TOKEN_LATENTS = 64  # the most latents kept per token (a TopK SAE activates k of them)


@dataclass(frozen=True)
class NodeFeatures:
    """Per node of an explanation's tree: ``latents`` (N, top), the strongest latents (-1: none), and ``values``
    (N, top) their largest activation on the node's usable tokens (NaN: none); ``layer`` the SAE's. Per token (T):
    ``token_latents`` and ``token_values`` (T, m), the latents active on it and their activations (-1 and 0 pad)."""

    layer: int
    latents: np.ndarray
    values: np.ndarray
    token_latents: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    token_values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))

    def of(self, node: int) -> list[tuple[int, float]]:
        """``(latent, activation)`` pairs of ``node``, strongest first."""
        return [(int(lat), float(v)) for lat, v in zip(self.latents[node], self.values[node], strict=True) if lat >= 0]

    def on_tokens(self, latent: int, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        """The activation of ``latent`` on each of ``tokens`` (token indices; 0 where it is not active)."""
        idx = np.asarray(tokens, dtype=np.int64)
        if not len(idx) or not self.token_latents.size:
            return np.zeros(len(idx))
        hit = self.token_latents[idx] == latent
        out: np.ndarray = np.where(hit, self.token_values[idx], 0.0).sum(axis=1)
        return out


def _long_states(bundle: ModelBundle, layer: int, ids: np.ndarray, max_window: int = 2048) -> torch.Tensor:
    """(T, d) block ``layer``'s output for a sequence of any length: windows of the context's length, each after the
    first starting half a window later and keeping only positions past the previous one (AsC-Eval's windows)."""
    window = max(2, min(bundle.context_length, max_window))
    if len(ids) <= window:
        return resid_post(bundle, layer, *padded(bundle, [ids]))[0]
    stride = window // 2
    parts, done, start = [], 0, 0
    while done < len(ids):
        part = resid_post(bundle, layer, *padded(bundle, [ids[start : start + window]]))[0]
        parts.append(part[done - start :])
        done = start + part.shape[0]
        start += stride
    return torch.cat(parts)


def features(sae: SparseAutoencoder, explanation: Explanation, bundle: ModelBundle, top: int = 5) -> NodeFeatures:
    """The strongest latents of every node of ``explanation`` (module doc); a
    :class:`probes.sae.model.SaeMismatchError` when ``sae`` is not of ``bundle``'s model."""
    layer = check_sae_for(sae, bundle)
    s = explanation.scores
    al = explanation.alignment
    states = _long_states(bundle, layer, np.asarray(s.ids))
    with torch.inference_mode():
        acts = sae.encode(states.to(next(sae.parameters()).device)).cpu().numpy()
    acts[~usable(np.asarray(s.special))] = 0.0
    n, top = explanation.tree.n_nodes, max(1, min(top, sae.cfg.d_sae))
    latents = np.full((n, top), -1, dtype=np.int64)
    values = np.full((n, top), np.nan)
    for i in range(n):
        tokens = al.tokens_of(i)
        if not len(tokens):
            continue
        best = acts[tokens].max(axis=0)
        pick = np.argsort(-best, kind="stable")[:top]
        pick = pick[best[pick] > 0]
        latents[i, : len(pick)] = pick
        values[i, : len(pick)] = best[pick]
    m = max(1, min(TOKEN_LATENTS, int((acts > 0).sum(axis=1).max(initial=0))))
    order = np.argsort(-acts, axis=1, kind="stable")[:, :m]
    kept = np.take_along_axis(acts, order, axis=1)
    token_latents = np.where(kept > 0, order, -1).astype(np.int64)
    return NodeFeatures(layer, latents, values, token_latents, np.where(kept > 0, kept, 0.0).astype(np.float32))
