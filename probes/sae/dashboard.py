"""Feature dashboards, offline: one latent's top contexts, histogram, categories and label; a snippet's nodes' latents.

:func:`latent_card` gathers, for latent ``I`` of an SAE on a corpus (:class:`probes.sae.corpus.CorpusActivations`
and its :class:`probes.sae.enrichment.Enrichment`): the ``top`` tokens where it is most active, each with its source
line and the node it is bound to highlighted (``[[...]]`` around the node's part of the line, the token's own text
named beside it), the histogram of its non-zero activations, the categories and node types it fires on (firing rate,
precision, tokens fired on), and the label :meth:`probes.sae.enrichment.Enrichment.label` derives from the enrichment:
the field's dashboards (Neuronpedia, SAELens's) show the same parts, with a label written by a language model; here
the label is a rule on the syntax, and nothing is fetched.

A snippet's nodes' latents (what the inspector's Features view shows) are :mod:`probes.sae.nodes`'s.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from asc.errors import InputError
from probes.sae.corpus import CorpusActivations
from probes.sae.enrichment import Enrichment

__all__ = ["check_latent", "latent_card", "render_card"]


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
