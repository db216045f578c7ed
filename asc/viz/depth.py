"""Pure figure builders for AsC-Eval per layer (:mod:`asc.depth`): ``LayerExplanation -> plotly Figure``.

* :func:`category_layer_heatmap`: category x layer values of one snippet on the fixed red-to-blue scale, the
  first layer where each category reaches the confidence line (:data:`asc.concepts.CONFIDENCE_LINE`) boxed (and named in the row label), the shown layer
  outlined;
* :func:`node_layer_curve`: one node's value across layers with the confidence line, points colored on the same scale.

Layer 0 is the embeddings, the last layer the output (equal to the inspector's usual values). Nothing is
computed here beyond reading the arrays; category and node text is HTML-escaped (a category mapping is an
editable file, node text is code).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from asc.concepts import CONFIDENCE_LINE
from asc.depth import LayerExplanation
from asc.missing import ABSENT
from asc.viz.colors import COLORSCALE, value_color
from asc.viz.html import escape_text
from asc.viz.snippet import node_label

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["category_layer_heatmap", "node_layer_curve"]

LAYER_AXIS = "layer (0 = embeddings, {last} = output)"


def _value_text(value: float) -> str:
    return ABSENT if math.isnan(value) else f"{value:.3f}"


def category_layer_heatmap(depth: LayerExplanation, threshold: float = CONFIDENCE_LINE, layer: int | None = None,
                           title: str | None = None) -> go.Figure:
    """Category (rows, mapping order) x layer (columns) heatmap of ``depth.category_values``; categories absent
    from the snippet are left out (named under the plot). The cell of each category's first layer ``>=
    threshold`` is boxed (shapes named ``crossing``) and its row label ends with that layer, or ``never``;
    ``layer``, when given, is outlined (a shape named ``layer``). Hover: category, layer, value, crossing."""
    import plotly.graph_objects as go

    last = depth.n_layers - 1
    crossing = depth.crossing(threshold)
    present = [k for k, cat in enumerate(depth.categories) if not np.isnan(depth.category_values[:, k]).all()]
    absent = [cat for k, cat in enumerate(depth.categories) if k not in present]
    names = [escape_text(depth.categories[k]) for k in present]
    z = depth.category_values[:, present].T  # (C', L + 1)
    notes = [f"first ≥ {threshold:g} at layer {crossing[depth.categories[k]]}"
             if crossing[depth.categories[k]] is not None else f"never reaches {threshold:g}" for k in present]
    labels = [f"{name} ({'never' if crossing[depth.categories[k]] is None else f'L{crossing[depth.categories[k]]}'})"
              for name, k in zip(names, present)]
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=list(range(depth.n_layers)), y=names, colorscale=COLORSCALE, zmin=0.0, zmax=1.0,
        text=[[_value_text(v) for v in row] for row in z.tolist()], customdata=[[note] * depth.n_layers for note in notes],
        hovertemplate="category %{y}<br>layer %{x}<br>value %{text}<br>%{customdata}<extra></extra>",
        hoverongaps=False, xgap=1, ygap=1, name="values",
        colorbar={"title": {"text": escape_text(f"value ({depth.explanation.aggregate})")}, "thickness": 12,
                  "tickvals": [0, 0.2, 0.4, 0.6, 0.8, 1.0]}))
    for row, k in enumerate(present):
        hit = crossing[depth.categories[k]]
        if hit is not None:
            fig.add_shape(type="rect", x0=hit - 0.5, x1=hit + 0.5, y0=row - 0.5, y1=row + 0.5, name="crossing",
                          line={"color": "black", "width": 2.5})
    if layer is not None and present:
        shown = layer % depth.n_layers
        fig.add_shape(type="rect", x0=shown - 0.5, x1=shown + 0.5, y0=-0.5, y1=len(present) - 0.5, name="layer",
                      line={"color": "#222", "width": 1.5, "dash": "dot"})
    if absent:
        fig.add_annotation(text=escape_text("absent from this snippet: " + ", ".join(absent)), showarrow=False,
                           xref="paper", yref="paper", x=0, y=0, xanchor="left", yanchor="top",
                           yshift=-52, font={"size": 10, "color": "#666"})  # under the axis title
    fig.update_layout(
        title={"text": escape_text(title or f"Category value per layer (box: first layer ≥ {threshold:g})"),
               "font": {"size": 13}},
        xaxis={"title": LAYER_AXIS.format(last=last), "range": [-0.5, last + 0.5], "showgrid": False},
        yaxis={"autorange": "reversed", "tickvals": names, "ticktext": labels, "showgrid": False},
        height=max(240, 24 * len(present) + 150), margin={"l": 10, "r": 10, "t": 40, "b": 80 if absent else 50},
        plot_bgcolor="white")
    return fig


def node_layer_curve(depth: LayerExplanation, node: int, threshold: float = CONFIDENCE_LINE,
                     layer: int | None = None) -> go.Figure:
    """``node``'s value at every layer (points colored on the value scale) with the ``threshold`` line; its first
    layer ``>= threshold`` is ringed (trace ``crossing``) and ``layer``, when given, marked by a dotted line."""
    import plotly.graph_objects as go

    curve = depth.node_curve(node)
    ex = depth.explanation
    last = depth.n_layers - 1
    values = curve["value"].to_numpy(dtype=float)
    layers = curve["layer"].tolist()
    fig = go.Figure(go.Scatter(
        x=layers, y=[None if math.isnan(v) else v for v in values], mode="lines+markers", name="value",
        line={"color": "#777", "width": 1.5},
        marker={"size": 8, "color": [value_color(v) for v in values], "line": {"color": "#333", "width": 0.5}},
        hovertemplate="layer %{x}<br>value %{y:.3f}<extra></extra>"))
    hits = np.nonzero(np.nan_to_num(values, nan=-1.0) >= threshold)[0]
    if len(hits):
        first = int(hits[0])
        fig.add_trace(go.Scatter(x=[first], y=[values[first]], mode="markers", name="crossing", showlegend=False,
                                 marker={"size": 16, "color": "rgba(0,0,0,0)", "line": {"color": "#000", "width": 2}},
                                 hovertemplate=f"first ≥ {threshold:g} at layer {first}<extra></extra>"))
    fig.add_hline(y=threshold, line={"dash": "dash", "color": "#2a7f2a"}, annotation_text=f"{threshold:g}",
                  annotation_position="top right")
    if layer is not None:
        fig.add_vline(x=layer % depth.n_layers, line={"dash": "dot", "color": "#222", "width": 1})
    text = ex.tree.text(node).replace("\n", "⏎ ")
    state = ("no tokens: no value at any layer" if np.isnan(values).all()
             else f"first ≥ {threshold:g} at layer {int(hits[0])}" if len(hits) else f"never reaches {threshold:g}")
    fig.update_layout(
        title={"text": escape_text(f"Node {node} {node_label(ex, node)}: {text[:40]}{'…' if len(text) > 40 else ''}"
                                   f" · {state}"), "font": {"size": 13}},
        xaxis={"title": LAYER_AXIS.format(last=last), "range": [-0.5, last + 0.5]},
        yaxis={"title": escape_text(f"value ({ex.aggregate})"), "range": [0, 1.05]},
        height=320, margin={"l": 10, "r": 10, "t": 40, "b": 40}, plot_bgcolor="white", showlegend=False)
    return fig
