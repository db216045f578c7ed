"""Pure figure builders for AsC-Viz: ``Explanation -> plotly Figure`` (or an HTML string).

Nothing here computes a score or mutates its input; every function may be called again with the
same arguments and returns an equal figure. Colors use one fixed scale for every view: red (0,
poorly predicted) through yellow to blue (1, confident), ``cmin=0, cmax=1``, with a legend; nodes
and tokens with no value are grey. Error nodes are drawn with a black X outline, MISSING nodes as
open diamonds, folded nodes with a "+" after their label. Text from the code (labels, hover text) and titles
are HTML-escaped: plotly would render a string literal's ``<a href=...>`` as a link.
"""

from __future__ import annotations

import html
import math
from collections.abc import Collection
from typing import TYPE_CHECKING, Literal

import numpy as np

from asc.concepts import CONFIDENCE_LINE, category_label
from asc.explain import Explanation
from asc.missing import ABSENT
from asc.viz.colors import COLORSCALE, NO_VALUE, blend, colorbar_trace, text_color, value_color
from asc.viz.html import escape_text
from asc.viz.layout import TreeLayout, tree_layout
from asc.viz.treefit import FONT_FAMILY, fit_labels, node_label, text_px, wrap_px

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["tree_figure", "sequence_html", "category_figure", "legend_tick", "node_label"]

ROW_PX = 18
TITLE_PX = 13  # the title's font size; its lines are TITLE_PX + 5 px apart
LEGEND_PX = 58  # the horizontal color legend under the title: its title, bar, tick labels and padding
LEGEND_LEN_PX = 180
MIN_WIDTH_PX = 380  # room for the legend and its title beside it


def _hover(ex: Explanation, members: tuple[int, ...], values: np.ndarray, value_label: str, n_tokens: int) -> str:
    t = ex.tree
    node = members[0]
    text = t.text(node, limit=81).replace("\n", "⏎ ")  # never copies more of a long node's text than is shown
    text = html.escape(text[:80] + ("…" if len(text) > 80 else ""))
    value = values[node]
    chain = " › ".join(t.type[m] for m in members)
    flags = " ERROR" if t.is_error[node] else (" MISSING" if t.is_missing[node] else "")
    return (f"<b>{html.escape(chain)}</b>{flags}<br>category: {html.escape(category_label(ex.node_category[node]))}<br>"
            f"{html.escape(value_label)}: {ABSENT if math.isnan(value) else f'{value:.3f}'}"
            f"<br>tokens: {n_tokens}<br>{text}")


def _per_point(values: np.ndarray) -> object:
    """A marker property for plotly: one scalar when every point has the same value (plotly validates a long
    list element by element, seconds for tens of thousands of nodes), else the array."""
    return values[0].item() if len(values) and (values == values[0]).all() else values


def legend_tick(value: float) -> str:
    """A tree legend's tick label: ``value`` to 4 significant digits, a negative one with the minus sign (U+2212)
    plotly writes."""
    text = f"{value:.4g}"
    return "\u2212" + text[1:] if text.startswith("-") else text


def tree_figure(ex: Explanation, view: Literal["partial", "complete"] = "partial", max_depth: int | None = None,
                collapse_unary: bool = False, selected: int | None = None, layout: TreeLayout | None = None,
                values: np.ndarray | None = None, colorscale: str = COLORSCALE, cmin: float = 0.0, cmax: float = 1.0,
                value_label: str | None = None, title: str | None = None, max_width: int | None = None) -> go.Figure:
    """Node-link drawing of the AST, left to right, nodes colored by their AsC-Eval value.

    ``customdata`` of the node traces holds the node id (for click selection). Valued nodes are one
    trace whose ``marker.color`` is exactly the drawn nodes' values: ``ex.values`` by default, or
    ``values`` (shape (N,), e.g. a difference between two models, with a diverging ``colorscale``).
    The color legend is a horizontal bar under the title, at the left, where it stays in view.

    ``max_width`` (px, the panel's width): labels as detailed as fit in it (:func:`asc.viz.treefit.fit_labels`:
    abbreviated node types, shorter chains and leaf texts; the hover text keeps everything). The figure's
    ``layout.meta["fits"]`` says whether it does; a tree too deep for any labels to fit is drawn wider.
    """
    import plotly.graph_objects as go

    lay = layout or tree_layout(ex.tree, view, max_depth, collapse_unary)
    t = ex.tree
    node_values = ex.values if values is None else np.asarray(values, dtype=np.float64)
    value_label = value_label or f"value ({ex.aggregate})"
    ex_values = node_values[lay.node] if lay.n_boxes else np.zeros(0)
    margin = {"l": 10, "r": 14, "b": 10}
    fitted = fit_labels(ex, lay, None if max_width is None else max_width - margin["l"] - margin["r"] - 20)
    labels, label_px, px = fitted.labels, fitted.label_px, fitted.x_px
    fig = go.Figure()
    # elbow edges: from the end of the parent's label, down/up a bar just left of the child column
    # (5 points per edge, a NaN gap between edges: float arrays, which plotly takes and copies as a block)
    p, c = lay.edges().T
    bar = px[c] - fitted.style.gap_px / 2
    ex_ = np.column_stack([px[p] + label_px[p], bar, bar, px[c] - 7, np.full(len(p), np.nan)]).ravel()
    ey = np.column_stack([lay.y[p], lay.y[p], lay.y[c], lay.y[c], np.full(len(p), np.nan)]).ravel()
    fig.add_trace(go.Scatter(x=ex_, y=ey, mode="lines", line={"color": "#9a9a9a", "width": 1},
                             hoverinfo="skip", showlegend=False, name="edges"))
    n_tokens = ex.alignment.counts()
    hovers = [_hover(ex, mem, node_values, value_label, int(n_tokens[mem[0]])) for mem in lay.members]
    has = ~np.isnan(ex_values)
    err = t.is_error[lay.node] if lay.n_boxes else np.zeros(0, bool)
    missing = t.is_missing[lay.node] if lay.n_boxes else np.zeros(0, bool)
    symbols = np.where(missing, "diamond-open", np.where(err, "x", "circle"))
    line_w = np.where(err | missing, 2.5, 0.5)
    # plot area = the x range in pixels exactly: 12 px left of the root's center to 8 px past the longest label
    width = max(MIN_WIDTH_PX, int(fitted.width_px + 20 + margin["l"] + margin["r"]) + 1)
    heading = wrap_px(title or f"{view} AST: {lay.n_boxes} nodes", width - margin["l"] - margin["r"], TITLE_PX)
    top = (heading.count("<br>") + 1) * (TITLE_PX + 5) + 8 + LEGEND_PX
    height = max(320, int(ROW_PX * max(lay.n_rows, 1)) + top + margin["b"])
    # the legend's tick labels are centred on their ticks: the bar starts half the widest label in from the margin,
    # so the left end's label (a negative number: its minus sign first) is never cut at the figure's edge
    ticks = [float(f"{v:.3g}") for v in np.linspace(cmin, cmax, 6)]
    tick_text = [legend_tick(v) for v in ticks]
    inset = math.ceil(max(text_px(t, 10) for t in tick_text) / 2) + 2
    for mask, name in ((has, "value"), (~has, "no tokens")):
        idx = np.flatnonzero(mask)
        marker = {"size": 12, "symbol": _per_point(symbols[idx]), "line": {"color": "#222", "width": _per_point(line_w[idx])}}
        if name == "value":
            marker.update(color=ex_values[idx], colorscale=colorscale, cmin=cmin, cmax=cmax, showscale=True, colorbar={
                "title": {"text": escape_text(value_label), "side": "top", "font": {"size": 11}},
                "orientation": "h", "thickness": 10, "lenmode": "pixels", "len": LEGEND_LEN_PX,
                "xref": "container", "x": (margin["l"] + inset) / width, "xanchor": "left", "xpad": 0,
                "yref": "container", "y": 1 - (top - LEGEND_PX + 16) / height, "yanchor": "top", "ypad": 0,
                "tickfont": {"size": 10}, "tickvals": ticks, "ticktext": tick_text})
        else:
            marker.update(color=NO_VALUE)
        fig.add_trace(go.Scatter(
            x=px[idx], y=lay.y[idx], mode="markers+text", name=name, marker=marker,
            text=np.array([escape_text(labels[i]) for i in idx], dtype=object), textposition="middle right",
            textfont={"size": fitted.style.font_px, "family": FONT_FAMILY}, customdata=lay.node[idx],
            hovertext=np.array([hovers[i] for i in idx], dtype=object), hoverinfo="text", showlegend=False,
            cliponaxis=False,  # a label never stops at the plot's edge (the range holds it: a safeguard)
            # a click selects a point; keep every node's color (the black ring marks the selection)
            selected={"marker": {"opacity": 1}}, unselected={"marker": {"opacity": 1}, "textfont": {"color": "#444"}}))
    box = [k for k, mem in enumerate(lay.members) if selected in mem] if selected is not None else []
    if box:  # the box showing the node, also when it was merged into a collapsed chain
        k = box[0]
        fig.add_trace(go.Scatter(x=[px[k]], y=[lay.y[k]], mode="markers", hoverinfo="skip", showlegend=False,
                                 name="selected", marker={"size": 22, "color": "rgba(0,0,0,0)",
                                                          "line": {"color": "#000", "width": 3}}))
    fig.update_layout(
        width=width, height=height, margin={**margin, "t": top, "autoexpand": False},
        xaxis={"visible": False, "range": [-12, width - margin["l"] - margin["r"] - 12]},
        yaxis={"visible": False, "autorange": "reversed"},
        plot_bgcolor="white", dragmode="pan", clickmode="event+select", meta={"fits": fitted.fits},
        title={"text": heading, "font": {"size": TITLE_PX, "family": FONT_FAMILY}, "x": margin["l"] / width,
               "xanchor": "left", "y": 1 - 6 / height, "yanchor": "top"})
    return fig


def sequence_html(ex: Explanation, selected: int | None = None, n_prompt: int | None = None,
                  forks: Collection[int] | None = None) -> str:
    """The code with each token's background colored by its probability (an HTML fragment).

    Hovering a token shows its text, probability, rank, entropy and top alternatives. Tokens bound
    to ``selected`` are outlined; tokens from ``n_prompt`` on (generated) are underlined and preceded
    by a marker; token indices in ``forks`` (fork points, :mod:`asc.branching.forks`) get a purple bar above them
    and "fork point" in their hover text. Characters shared by two tokens (a split multi-byte character)
    are drawn once. Token text is black or white, whichever contrasts more with its background
    (:func:`asc.viz.colors.text_color`: a WCAG contrast ratio of at least 4.5).
    """
    s = ex.scores
    src = ex.source
    picked = set(ex.alignment.tokens_of(selected).tolist()) if selected is not None else set()
    fork_set = {int(i) for i in forks} if forks is not None else set()
    out = ['<pre class="asc-seq" style="font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px;'
           'line-height:1.55;white-space:pre;overflow-x:auto;padding:8px;border:1px solid #ddd;'
           'border-radius:6px;background:#fff;color:#111">']
    pos = 0
    for i in range(s.n_tokens):
        a, b = int(s.start[i]), int(s.end[i])
        if a > pos:  # text no token covers (rare: tokenizers that drop characters)
            out.append(html.escape(src[pos:a]))
            pos = a
        if n_prompt is not None and i == n_prompt:
            out.append('<span title="generated from here" style="border-left:3px solid #111;margin-left:1px"></span>')
        if b <= pos:
            continue
        piece = src[max(a, pos):b]
        pos = b
        p = s.prob[i]
        if math.isnan(p):
            tip = f"{piece!r}  no prediction ({'special token' if s.special[i] else 'first token, no BOS'})"
        else:
            alts = ", ".join(f"{t!r} {q:.3f}" for t, q in zip(s.top_text[i], s.top_probs[i]))
            tip = (f"{piece!r}  p={p:.3f}  rank {int(s.rank[i])}  entropy {s.entropy[i]:.2f} nats\ntop: {alts}")
        if i in fork_set:
            tip += "\nfork point: the model hesitated here"
        color = value_color(None if math.isnan(p) else p)
        seen = color
        if not piece.strip():  # newline/indent tokens: same color, lighter, so code stays readable
            seen = blend(color, 0.35) if color.startswith("rgb(") else "#e4e4e4"
            color = color.replace("rgb(", "rgba(").replace(")", ",0.35)") if color.startswith("rgb(") else "#e4e4e4"
        style = f"background:{color};color:{text_color(seen)};border-radius:2px"
        if i in picked:
            style += ";outline:2px solid #000;outline-offset:-1px"
        if i in fork_set:
            style += ";box-shadow:inset 0 3px 0 #8e24aa"
        if n_prompt is not None and i >= n_prompt:
            style += ";text-decoration:underline;text-decoration-thickness:2px;font-weight:600"
        fork_attr = ' data-fork="1"' if i in fork_set else ""
        out.append(f'<span data-token="{i}"{fork_attr} title="{html.escape(tip)}" style="{style}">{html.escape(piece)}</span>')
    if pos < len(src):
        out.append(html.escape(src[pos:]))
    out.append("</pre>")
    return "".join(out)


def category_figure(values: dict[str, float], threshold: float = CONFIDENCE_LINE,
                    title: str = "AsC-Eval per category") -> go.Figure:
    """Bar per category on the fixed 0-1 scale with the threshold line; absent categories are labelled."""
    import plotly.graph_objects as go

    names = list(values)
    vals = [values[n] for n in names]
    present = [v is not None and not math.isnan(v) for v in vals]
    fig = go.Figure(go.Bar(
        x=names, y=[v if ok else 0 for v, ok in zip(vals, present)],
        marker={"color": [value_color(v) if ok else NO_VALUE for v, ok in zip(vals, present)],
                "line": {"color": "#444", "width": 0.5}},
        text=[f"{v:.2f}" if ok else "absent" for v, ok in zip(vals, present)], textposition="outside",
        hovertemplate="%{x}: %{text}<extra></extra>"))
    fig.add_trace(colorbar_trace(COLORSCALE, 0.0, 1.0, "value", len=0.8))  # the bars' colors: the confidence scale
    fig.update_layout(showlegend=False)  # the color bar is the legend
    fig.add_hline(y=threshold, line={"dash": "dash", "color": "#2a7f2a"}, annotation_text=f"{threshold:g}",
                  annotation_position="top left")
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 40, "b": 10}, title={"text": title, "font": {"size": 13}},
                      yaxis={"range": [0, 1.12], "title": "value"}, plot_bgcolor="white")
    return fig
