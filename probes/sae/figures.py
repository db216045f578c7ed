"""Pure figure builders of the *Syntax features* page and notebooks: an enrichment or a dashboard in, plotly or HTML out.

- :func:`category_heatmap`: syntax category x latent, each category's best latents (by F1) side by side, colored by
  F1, precision or firing rate on :data:`asc.viz.colors.LATENT_SCALE` fixed at 0-1;
- :func:`activation_histogram`: one latent's non-zero activations (:func:`probes.sae.dashboard.latent_card`'s
  histogram), in the neutral grey of counts;
- :func:`card_html`: one latent's dashboard as HTML: its label, its top contexts with the node highlighted and the
  token underlined, its categories and node types.

Figures are sized to a panel (``width`` px, the page passes its panel's); every text that comes from code or from a
corpus (categories, node types, source lines) is HTML-escaped.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.viz.colors import LATENT_SCALE, NEUTRAL
from asc.viz.html import escape_text
from probes.sae.enrichment import Enrichment

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["HEATMAP_VALUES", "activation_histogram", "card_html", "category_heatmap", "heatmap_latents"]

#: what the heatmap may color by: the enrichment's (L, C) array of each
HEATMAP_VALUES = {"f1": "f1_category", "precision": "precision_category", "firing rate": "rate_category"}


def heatmap_latents(enrichment: Enrichment, per_category: int = 3) -> list[int]:
    """The latents the heatmap shows: each category's ``per_category`` best by F1 (those with F1 above 0), in
    category order, each once."""
    shown: list[int] = []
    for category in enrichment.categories:
        for row in enrichment.ranked(category, per_category):
            if row["latent"] not in shown:
                shown.append(int(row["latent"]))
    return shown


def category_heatmap(enrichment: Enrichment, value: str = "f1", per_category: int = 3, width: int = 940) -> go.Figure:
    """Category x latent heatmap of ``value`` (a key of :data:`HEATMAP_VALUES`) over :func:`heatmap_latents`,
    ``width`` px wide; categories where no latent fires are left out."""
    import plotly.graph_objects as go

    if value not in HEATMAP_VALUES:
        raise ValueError(f"value is one of {', '.join(HEATMAP_VALUES)}, not {value!r}")
    latents = heatmap_latents(enrichment, per_category)
    rows = [i for i, c in enumerate(enrichment.categories) if enrichment.ranked(c, 1)]
    grid = np.asarray(getattr(enrichment, HEATMAP_VALUES[value]), dtype=float)
    z = grid[np.ix_(latents, rows)].T if latents and rows else np.zeros((0, 0))
    names = [escape_text(enrichment.categories[i]) for i in rows]
    labels = [escape_text(enrichment.label(i)) for i in latents]
    custom = [[labels[j] for j in range(len(latents))] for _ in rows]
    height = max(260, 22 * len(rows) + 150)
    fig = go.Figure(go.Heatmap(
        z=[[None if v != v else round(float(v), 4) for v in row] for row in z], x=[f"#{i}" for i in latents], y=names,
        customdata=custom, colorscale=LATENT_SCALE, zmin=0.0, zmax=1.0, xgap=1, ygap=1,
        colorbar={"title": {"text": value}, "thickness": 12},
        hovertemplate="category %{y}<br>latent %{x}: %{customdata}<br>" + value + " %{z:.3f}<extra></extra>"))
    fig.update_layout(width=width, height=height, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title={"text": f"Each syntax category's best latents (by F1), colored by {value}",
                             "font": {"size": 13}},
                      xaxis={"title": "latent", "type": "category", "tickangle": -60, "tickfont": {"size": 9}},
                      yaxis={"autorange": "reversed", "tickfont": {"size": 10}})
    return fig


def activation_histogram(card: dict[str, Any], width: int = 460) -> go.Figure:
    """The histogram of ``card``'s (:func:`probes.sae.dashboard.latent_card`) non-zero activations, ``width`` px."""
    import plotly.graph_objects as go

    edges = np.asarray(card["histogram"]["edges"], dtype=float)
    counts = list(card["histogram"]["counts"])
    mids = ((edges[:-1] + edges[1:]) / 2).tolist() if len(edges) > 1 else []
    fig = go.Figure(go.Bar(x=mids, y=counts, marker_color=NEUTRAL,
                           width=float(np.diff(edges).mean()) if len(edges) > 1 else None,
                           hovertemplate="activation %{x:.3f}<br>%{y} tokens<extra></extra>"))
    fig.update_layout(width=width, height=260, margin={"l": 10, "r": 10, "t": 40, "b": 10}, bargap=0.05,
                      title={"text": f"Latent {card['latent']}: activations where it fires ({card['fires']:,} tokens)",
                             "font": {"size": 13}},
                      xaxis={"title": "activation"}, yaxis={"title": "tokens"})
    return fig


def _line(source: str, token: Sequence[int], node: Sequence[int]) -> str:
    """The token's source line as HTML: the node's part of it marked, the token underlined, all escaped."""
    t0, t1 = int(token[0]), int(token[1])
    n0, n1 = int(node[0]), int(node[1])
    start = source.rfind("\n", 0, t0) + 1
    stop = source.find("\n", t1)
    stop = len(source) if stop < 0 else stop
    cuts = sorted({start, stop, *(min(max(v, start), stop) for v in (t0, t1, n0, n1))})
    parts = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        text = html.escape(source[a:b])
        if t0 <= a and b <= t1:
            text = f"<u><b>{text}</b></u>"
        if n0 <= a and b <= n1:
            text = f'<mark style="background:#fde68a">{text}</mark>'
        parts.append(text)
    return "".join(parts)


def card_html(card: dict[str, Any], sources: Sequence[str]) -> str:
    """``card`` (:func:`probes.sae.dashboard.latent_card`) as an HTML fragment: its label and firing, the top
    contexts (``sources``: the corpus the card was made on) with the node highlighted and the token underlined, and
    the categories and node types it fires on. Every text is escaped."""
    s = card["summary"]
    best = (f"; best category {html.escape(str(s['best_category']))} (precision {s['category_precision']:.2f}, recall "
            f"{s['category_recall']:.2f})" if s.get("best_category") else "")
    out = [f"<h4>Latent {int(card['latent'])}: {html.escape(str(card['label']))}</h4>",
           f"<p>fires on {int(card['fires']):,} of {int(card['n_tokens']):,} tokens{best}</p>",
           "<table class='sae-contexts'><tr><th>activation</th><th>where</th><th>token</th>"
           "<th>source line (node highlighted, token underlined)</th></tr>"]
    for c in card["contexts"]:
        line = _line(sources[int(c["snippet"])], c["token_span"], c["node_span"])
        out.append(f"<tr><td>{float(c['activation']):.3f}</td><td>snippet {int(c['snippet'])}, line {int(c['line'])}"
                   f"<br>{html.escape(str(c['node_type']))}</td><td><code>{html.escape(repr(c['token']))}</code></td>"
                   f"<td><pre style='white-space:pre-wrap;margin:0'>{line}</pre></td></tr>")
    out.append("</table>")
    if not card["contexts"]:
        out.append("<p>It never fires on this corpus.</p>")
    for key in ("categories", "node_types"):
        rows = "".join(f"<tr><td>{html.escape(str(r['name']))}</td><td>{r['precision']:.3f}</td>"
                       f"<td>{r['firing_rate']:.3f}</td><td>{int(r['tokens']):,}</td></tr>" for r in card[key][:12])
        out.append(f"<p><b>{key.replace('_', ' ')} it fires on</b></p><table><tr><th>name</th><th>precision</th>"
                   f"<th>firing rate</th><th>tokens</th></tr>{rows or '<tr><td colspan=4>-</td></tr>'}</table>")
    return "\n".join(out)
