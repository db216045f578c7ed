"""Pure figure builders for the probes: tables and results in, plotly figures out (nothing mutated).

- :func:`layer_heatmap`: INSPECT Appendix A, task x layer test accuracy for one model;
- :func:`best_layer_heatmap`: model x task accuracy at the dev-chosen layer (layer in the cell);
- :func:`normalized_heatmap`: paper Table III, accuracy normalized between a baseline model and the best;
- :func:`layer_curves`: one task, accuracy per layer for each model, with control and majority lines;
- :func:`confusion_figure`: the test confusion matrix of one (model, task, layer) probe.

Accuracy uses the app's red-yellow-blue scale fixed at 0-1 (red: poorly, blue: well).
"""

from __future__ import annotations

import numpy as np

from asc.corpus_figures import MODEL_COLORS
from asc.figures import COLORSCALE

__all__ = ["best_layer_heatmap", "confusion_figure", "layer_curves", "layer_heatmap", "normalized_heatmap"]


def _cell_text(values: np.ndarray, fmt: str = "{:.2f}") -> list[list[str]]:
    return [["" if v != v else fmt.format(v) for v in row] for row in values]


def layer_heatmap(table, model: str, value: str = "accuracy", tasks=None):
    """Task x layer heatmap of ``value`` (a column of :func:`probes.layers.results_table`) for ``model``.

    Rows follow ``tasks`` (default: the table's order); the dev-chosen layer of each task is boxed.
    """
    import plotly.graph_objects as go

    sub = table[table["model"] == model]
    order = [t for t in (tasks or list(dict.fromkeys(sub["task"]))) if t in set(sub["task"])]
    grid = sub.pivot_table(index="task", columns="layer", values=value, aggfunc="first").reindex(order)
    z = grid.to_numpy(dtype=float)
    signed = value == "selectivity"
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=[int(c) for c in grid.columns], y=list(grid.index), colorscale=COLORSCALE,
        zmin=-1.0 if signed else 0.0, zmax=1.0, text=_cell_text(z), texttemplate="%{text}",
        textfont={"size": 9}, colorbar={"title": value.replace("_", " ")},
        hovertemplate="task %{y}<br>layer %{x}<br>" + value.replace("_", " ") + " %{z:.3f}<extra></extra>"))
    best = sub[sub["best_layer"]]
    for _, row in best.iterrows():
        if row["task"] in order:
            fig.add_shape(type="rect", x0=row["layer"] - 0.5, x1=row["layer"] + 0.5, y0=order.index(row["task"]) - 0.5,
                          y1=order.index(row["task"]) + 0.5, line={"color": "black", "width": 2})
    fig.update_layout(title=f"{model}: {value.replace('_', ' ')} per task and layer (box: layer chosen on dev)",
                      xaxis_title="layer (0 = embeddings)", yaxis={"autorange": "reversed", "title": "task"},
                      height=max(260, 28 * len(order) + 140), margin={"l": 60, "r": 20, "t": 50, "b": 40})
    return fig


def best_layer_heatmap(best, tasks=None):
    """Model x task test accuracy at the layer chosen on dev; the cell text gives accuracy and layer."""
    import plotly.graph_objects as go

    order = [t for t in (tasks or list(dict.fromkeys(best["task"]))) if t in set(best["task"])]
    acc = best.pivot_table(index="model", columns="task", values="accuracy", aggfunc="first").reindex(columns=order)
    layer = best.pivot_table(index="model", columns="task", values="layer", aggfunc="first").reindex(
        index=acc.index, columns=order)
    z, lz = acc.to_numpy(dtype=float), layer.to_numpy(dtype=float)
    text = [["" if a != a else f"{a:.2f}<br>L{int(b)}" for a, b in zip(ra, rb)] for ra, rb in zip(z, lz)]
    fig = go.Figure(go.Heatmap(z=z.tolist(), x=order, y=list(acc.index), colorscale=COLORSCALE, zmin=0.0, zmax=1.0,
                               text=text, texttemplate="%{text}", textfont={"size": 10},
                               colorbar={"title": "accuracy"},
                               hovertemplate="%{y}<br>%{x}: %{z:.3f}<extra></extra>"))
    fig.update_layout(title="Best layer per model and task (chosen on dev, test accuracy)",
                      height=max(220, 46 * len(acc.index) + 130), margin={"l": 120, "r": 20, "t": 50, "b": 40})
    return fig


def normalized_heatmap(norm, baseline: str):
    """Table III: 0 = the baseline model, 100 = the task's best model; below the baseline is negative."""
    import plotly.graph_objects as go

    z = norm.to_numpy(dtype=float)
    fig = go.Figure(go.Heatmap(z=z.tolist(), x=list(norm.columns), y=list(norm.index), colorscale=COLORSCALE,
                               zmin=-100.0, zmax=100.0, zmid=0.0, text=_cell_text(z, "{:.0f}"),
                               texttemplate="%{text}", colorbar={"title": "normalized"},
                               hovertemplate="%{y}<br>%{x}: %{z:.1f}<extra></extra>"))
    fig.update_layout(title=f"Accuracy normalized between the baseline {baseline} (0) and the best model (100)",
                      height=max(220, 46 * len(norm.index) + 130), margin={"l": 120, "r": 20, "t": 50, "b": 40})
    return fig


def layer_curves(table, task: str, x: str = "layer"):
    """Accuracy per layer for every model on ``task`` (``x`` = ``layer`` or relative ``depth``), with the
    control task (dashed) and the majority baseline (dotted)."""
    import plotly.graph_objects as go

    sub = table[table["task"] == task]
    fig = go.Figure()
    for i, (model, part) in enumerate(sub.groupby("model", sort=False)):
        color = MODEL_COLORS[i % len(MODEL_COLORS)]
        part = part.sort_values("layer")
        fig.add_trace(go.Scatter(x=part[x].tolist(), y=part["accuracy"].tolist(), mode="lines+markers", name=model,
                                 line={"color": color}, customdata=part["layer"].tolist(),
                                 hovertemplate=model + " layer %{customdata}: %{y:.3f}<extra></extra>"))
        fig.add_trace(go.Scatter(x=part[x].tolist(), y=part["control_accuracy"].tolist(), mode="lines",
                                 name=f"{model} control", line={"color": color, "dash": "dash", "width": 1}))
    if len(sub):
        fig.add_hline(y=float(sub["majority"].iloc[0]), line={"dash": "dot", "color": "grey"},
                      annotation_text="majority class", annotation_position="bottom right")
    fig.update_layout(title=f"{task}: test accuracy per layer (dashed: control task with shuffled labels)",
                      xaxis_title="layer (0 = embeddings)" if x == "layer" else "relative depth (0 = embeddings, 1 = last)",
                      yaxis={"title": "accuracy", "range": [0, 1.02]}, height=380,
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig


def confusion_figure(result, layer: int):
    """Test confusion matrix (rows gold, columns predicted) of ``result``'s probe at ``layer``."""
    import plotly.graph_objects as go

    counts = result.confusion(layer)
    labels = list(result.labels)
    fig = go.Figure(go.Heatmap(z=counts.tolist(), x=labels, y=labels, colorscale="Blues", text=counts.tolist(),
                               texttemplate="%{text}", colorbar={"title": "samples"},
                               hovertemplate="gold %{y}<br>predicted %{x}<br>%{z} samples<extra></extra>"))
    fig.update_layout(title=f"{result.model} · {result.task} · layer {layer}: accuracy {result.accuracy[layer]:.3f}",
                      xaxis_title="predicted", yaxis={"title": "gold", "autorange": "reversed"},
                      height=max(300, 34 * len(labels) + 140), margin={"l": 80, "r": 20, "t": 50, "b": 60})
    return fig
