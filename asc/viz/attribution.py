"""Figures of "Why this token?": one :class:`~asc.why.attribute.Attribution` drawn on the code and on its trees.

Attributions are signed (a token or node that raised the target is positive, one that lowered it negative), so they
get a diverging scale centred on 0, symmetric around it (``-m .. m``, ``m`` the largest absolute value shown), in
colours of their own (:data:`ATTRIBUTION_SCALE`, magenta for negative, green for positive): the red-to-blue scale
stays the one of confidence, and a reader never takes an attribution for a probability.

- :func:`attribution_sequence_html`: the prompt with every attributed token's background on that scale, the target
  token (or node) outlined, tokens from the target on greyed; a legend bar (:func:`legend_html`) above it.
  Occlusion scores nodes, not tokens: each token then takes the value of the smallest occluded node that holds it.
- :func:`attribution_tree`: :func:`asc.viz.snippet.tree_figure` coloured by the node attributions.
- :func:`source_nodes_table`: the top source nodes (nested: each sums its descendants) with their text, attribution
  and size against the absolute total (``of |total|``; nested nodes overlap, so these are not shares).
- :func:`category_attribution_figure`: the signed attribution per category, each label with the part of the absolute
  attribution on the category's tokens (categories overlap: these parts need not add up to 100%).
All builders are pure: same input, same output, nothing read from the app.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Literal

import numpy as np

from asc.concepts import category_label
from asc.missing import ABSENT
from asc.viz.colors import ATTRIBUTION_SCALE, text_color
from asc.viz.html import visible_whitespace
from asc.viz.snippet import tree_figure
from asc.viz.tables import shown
from asc.why.attribute import Attribution

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["ATTRIBUTION_SCALE", "attribution_color", "attribution_sequence_html", "attribution_tree",
           "category_attribution_figure", "legend_html", "scale_max", "source_nodes_table", "token_values"]

_GREY = "#eeeeee"


def scale_max(values: np.ndarray) -> float:
    """The scale's half-width: the largest absolute finite value (1.0 when there is none or all are 0)."""
    finite = np.abs(np.asarray(values, dtype=np.float64))
    finite = finite[np.isfinite(finite)]
    top = float(finite.max()) if finite.size else 0.0
    return top if top > 0 else 1.0


def attribution_color(value: float, vmax: float) -> str:
    """``value`` on :data:`ATTRIBUTION_SCALE` from ``-vmax`` to ``vmax`` (an ``rgb(...)`` string); grey for NaN."""
    from plotly.colors import sample_colorscale

    if value is None or not math.isfinite(value):
        return _GREY
    x = 0.5 + 0.5 * max(-1.0, min(1.0, value / vmax))
    return str(sample_colorscale(ATTRIBUTION_SCALE, [x])[0])


def token_values(attr: Attribution) -> np.ndarray:
    """(T,) one value per token: the token attributions, or for occlusion (node values only) the value of the
    smallest node with a value that holds the token (NaN where none does)."""
    if attr.method != "occlusion" or not np.isnan(attr.token_attr).all():
        return np.asarray(attr.token_attr, dtype=np.float64)
    ex = attr.explanation
    t, al = ex.tree, ex.alignment
    out = np.full(ex.scores.n_tokens, np.nan)
    size = np.full(ex.scores.n_tokens, np.inf)
    for node in np.flatnonzero(~np.isnan(attr.node_attr)):
        width = float(t.end[node] - t.start[node])
        for tok in al.tokens_of(int(node)):
            if width < size[tok]:
                size[tok], out[tok] = width, attr.node_attr[node]
    out[attr.target.index:] = np.nan
    return out


def legend_html(vmax: float, label: str) -> str:
    """A horizontal colour bar from ``-vmax`` to ``vmax`` with its label (an HTML fragment)."""
    from plotly.colors import sample_colorscale

    stops = ", ".join(sample_colorscale(ATTRIBUTION_SCALE, [i / 10 for i in range(11)]))
    return ('<div class="asc-legend" style="display:flex;align-items:center;gap:8px;font-size:12px;margin:4px 0">'
            f'<span>{-vmax:.3g}</span><span style="display:inline-block;width:220px;height:12px;border-radius:2px;'
            f'background:linear-gradient(to right, {stops})"></span><span>{vmax:.3g}</span>'
            f'<span>{html.escape(label)}</span></div>')


def attribution_sequence_html(attr: Attribution, vmax: float | None = None) -> str:
    """The snippet with each token coloured by its attribution (module doc); the target's tokens are outlined and
    its first token carries ``data-target``. Hover: the token's attribution and share of the absolute total."""
    ex = attr.explanation
    s, src = ex.scores, ex.source
    values = token_values(attr)
    m = vmax if vmax is not None else scale_max(values)
    total = float(np.nansum(np.abs(values))) or 1.0
    targets = set(attr.target.positions)
    out = [legend_html(m, f"attribution ({attr.method}) to {attr.target.describe()}"),
           '<pre class="asc-seq asc-why" style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;'
           'line-height:1.55;white-space:pre;overflow-x:auto;padding:8px;border:1px solid #ddd;border-radius:6px;'
           'background:#fff;color:#111">']
    pos = 0
    for i in range(s.n_tokens):
        a, b = int(s.start[i]), int(s.end[i])
        if a > pos:
            out.append(html.escape(src[pos:a]))
            pos = a
        if b <= pos:
            continue
        piece = src[max(a, pos):b]
        pos = b
        v = float(values[i])
        if i in targets:
            tip, color = f"{piece!r}  the target (log p = {s.logprob[i]:.3f})", "#ffffff"
        elif i >= attr.target.index:
            tip, color = f"{piece!r}  after the target: not attributed", _GREY
        elif math.isnan(v):
            tip, color = f"{piece!r}  not attributed (special token)", _GREY
        else:
            tip = f"{piece!r}  attribution {v:+.4f} ({abs(v) / total:.1%} of the absolute total)"
            color = attribution_color(v, m)
        style = f"background:{color};color:{text_color(color)};border-radius:2px"
        extra = ""
        if i in targets:
            style += ";outline:2px solid #000;outline-offset:-1px;font-weight:600"
            extra = ' data-target="1"' if i == attr.target.index else ""
        elif i >= attr.target.index:
            style += ";opacity:0.55"
        out.append(f'<span data-token="{i}"{extra} data-attribution="{"" if math.isnan(v) else f"{v:.6g}"}" '
                   f'title="{html.escape(tip)}" style="{style}">{html.escape(piece)}</span>')
    if pos < len(src):
        out.append(html.escape(src[pos:]))
    out.append("</pre>")
    return "".join(out)


def attribution_tree(attr: Attribution, view: Literal["partial", "complete"] = "partial",
                     max_width: int | None = None, **kwargs: object) -> go.Figure:
    """The AST coloured by the node attributions on the diverging scale (NaN nodes grey); the target node (or the
    smallest node that holds the target token) is selected."""
    m = scale_max(attr.node_attr)
    ex = attr.explanation
    target_node = attr.target.node
    if target_node is None:
        holders = [i for i in range(ex.tree.n_nodes) if ex.tree.named[i] and attr.target.index in
                   set(ex.alignment.tokens_of(i).tolist())]
        target_node = min(holders, key=lambda i: int(ex.tree.end[i] - ex.tree.start[i])) if holders else None
    return tree_figure(ex, view, values=attr.node_attr, colorscale=ATTRIBUTION_SCALE, cmin=-m, cmax=m,
                       value_label=f"attribution ({attr.method})", selected=target_node, max_width=max_width,
                       **kwargs)  # type: ignore[arg-type]


def source_nodes_table(attr: Attribution, k: int = 10) -> pd.DataFrame:
    """The ``k`` named nodes with the largest absolute attribution (nested: a node sums its descendants): id, type,
    category, attribution, ``of |total|`` (its absolute attribution over the prompt tokens' absolute total: nested
    nodes overlap, so these do not add up to 1), text (whitespace shown)."""
    import pandas as pd

    ex = attr.explanation
    t = ex.tree
    total = float(np.nansum(np.abs(token_values(attr))))
    rows = [{"node": node, "type": t.type[node], "category": category_label(ex.node_category[node]), "attribution": value,
             "of |total|": abs(value) / total if total > 0 else math.nan,
             "text": visible_whitespace(t.text(node, limit=60))}
            for node, value in attr.top_nodes(k)]
    frame = pd.DataFrame(rows, columns=["node", "type", "category", "attribution", "of |total|", "text"])
    return shown(frame, ["attribution", "of |total|"], digits=4)


def category_attribution_figure(attr: Attribution) -> go.Figure:
    """Signed attribution per category (bars on the diverging scale). Each category's label, left of its bar, adds
    the part of the absolute attribution on its tokens ("absent": no token of it is attributed); categories overlap
    (a token can count for several), so these parts need not add up to 100%. Nothing is written beside the bars:
    every label lies in the axis margin, which plotly sizes to it, and the title is short, so none is cut at a
    narrow panel's edge."""
    import plotly.graph_objects as go

    cats = list(attr.category_attr)
    vals = [attr.category_attr[c] for c in cats]
    m = scale_max(np.array(vals, dtype=np.float64))
    parts = [ABSENT if not math.isfinite(v) else f"{attr.category_share.get(c, math.nan):.0%}"
             for c, v in zip(cats, vals, strict=True)]
    labels = [f"{c} · {p}" for c, p in zip(cats, parts, strict=True)]
    fig = go.Figure(go.Bar(x=[v if math.isfinite(v) else 0.0 for v in vals], y=labels, orientation="h",
                           marker_color=[attribution_color(v, m) for v in vals], customdata=parts,
                           marker_line={"color": "#555", "width": 0.5},
                           hovertemplate="%{y}: %{x:+.4f} (%{customdata} of the absolute attribution)<extra></extra>"))
    fig.update_layout(title={"text": f"Attribution per category ({attr.method})", "font": {"size": 14}},
                      height=80 + 26 * len(cats), margin={"l": 10, "r": 16, "t": 40, "b": 30},
                      yaxis={"autorange": "reversed", "automargin": True},
                      xaxis={"zeroline": True, "zerolinecolor": "#333", "automargin": True})
    return fig
