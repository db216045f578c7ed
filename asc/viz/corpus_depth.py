"""Pure figures of AsC-Eval per layer over a corpus: runs made with ``--per-layer`` (tables from
:func:`asc.corpus.depth.layer_summary`).

* :func:`layer_heatmap`: one model's category x layer medians on the shared red-yellow-blue 0-1 scale, each
  category's first layer at or above the threshold marked with a white ring;
* :func:`depth_curves`: one category's median across *relative* depth (``layer / L``), one line per model, so
  models of different depth share the x axis.

Nothing is computed here beyond layout; model names are HTML-escaped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asc.concepts import CONFIDENCE_LINE, GLOBAL
from asc.errors import InputError
from asc.viz.colors import COLORSCALE, MODEL_COLORS
from asc.viz.html import escape_text

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["depth_curves", "layer_heatmap"]


def _ordered(categories: list[str]) -> list[str]:
    return ([GLOBAL] if GLOBAL in categories else []) + sorted(c for c in categories if c != GLOBAL)


def layer_heatmap(summary: pd.DataFrame, model: str, threshold: float = CONFIDENCE_LINE) -> go.Figure:
    """Rows: categories (Global first); columns: layers (0 = embeddings); colour: the median node value."""
    import plotly.graph_objects as go

    rows = summary[summary["model"] == model]
    if rows.empty:
        raise InputError(f"no per-layer values for {model!r}: choose one of {', '.join(map(str, summary['model'].unique()))}")
    wide = rows.pivot_table(index="category", columns="layer", values="value", aggfunc="first")
    counts = rows.pivot_table(index="category", columns="layer", values="n", aggfunc="first")
    order = _ordered(list(wide.index))
    wide, counts = wide.loc[order], counts.loc[order]
    layers = [int(c) for c in wide.columns]
    fig = go.Figure(go.Heatmap(
        z=wide.to_numpy(), x=layers, y=order, colorscale=COLORSCALE, zmin=0, zmax=1,
        customdata=counts.to_numpy(), colorbar={"title": "median"},
        hovertemplate="%{y}, layer %{x}: %{z:.3f} (%{customdata} nodes)<extra></extra>"))
    xs, ys = [], []
    for category in order:
        hits = [layer for layer in layers if wide.loc[category, layer] >= threshold]
        if hits:
            xs.append(hits[0])
            ys.append(category)
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=f"first layer >= {threshold:g}",
                             marker={"symbol": "circle-open", "size": 13, "color": "white", "line": {"width": 2.5}},
                             hovertemplate="%{y}: first at or above " + f"{threshold:g}" + " at layer %{x}<extra></extra>"))
    fig.update_layout(height=max(260, 28 * len(order) + 120), plot_bgcolor="white",
                      title={"text": f"{escape_text(model)}: median node value per category and layer (logit lens)",
                             "font": {"size": 13}},
                      xaxis={"title": f"layer (0 = embeddings, {max(layers)} = output)", "dtick": 1 if len(layers) <= 20 else 2},
                      yaxis={"autorange": "reversed"}, legend={"orientation": "h", "y": -0.3},
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def depth_curves(summary: pd.DataFrame, category: str = GLOBAL, threshold: float = CONFIDENCE_LINE) -> go.Figure:
    """One line per model: the category's median node value against relative depth (0 = embeddings, 1 = output)."""
    import plotly.graph_objects as go

    rows = summary[summary["category"] == category]
    if rows.empty:
        raise InputError(f"no per-layer values for category {category!r}: choose one of "
                         f"{', '.join(_ordered(list(summary['category'].unique())))}")
    fig = go.Figure()
    for k, (model, group) in enumerate(rows.groupby("model", sort=False)):
        group = group.sort_values("layer")
        fig.add_trace(go.Scatter(
            x=group["depth"], y=group["value"], mode="lines+markers", name=escape_text(str(model)),
            line={"color": MODEL_COLORS[k % len(MODEL_COLORS)]}, customdata=group[["layer", "n"]].to_numpy(),
            hovertemplate="layer %{customdata[0]} (depth %{x:.2f}): %{y:.3f}, %{customdata[1]} nodes"
                          "<extra>%{fullData.name}</extra>"))
    fig.add_hline(y=threshold, line={"dash": "dash", "color": "#2a7f2a"}, annotation_text=f"{threshold:g}",
                  annotation_position="top left")
    fig.update_layout(height=360, plot_bgcolor="white", yaxis={"range": [0, 1.02], "title": "median node value"},
                      xaxis={"title": "relative depth (layer / number of layers)", "range": [0, 1]},
                      title={"text": f"{escape_text(category)} across depth (logit lens)", "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.25}, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig
