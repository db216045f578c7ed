"""Pure figure builders for the probes: tables and results in, plotly figures out (nothing mutated).

- :func:`layer_heatmap`: INSPECT Appendix A, task x layer test accuracy for one model, with the majority class and
  the control task beside it;
- :func:`best_layer_heatmap`: model x task accuracy at the dev-chosen layer (layer in the cell);
- :func:`normalized_heatmap`: paper Table III, accuracy normalized between a baseline model and the best;
- :func:`layer_curves`: one task, accuracy per layer for each model, with control and majority lines;
- :func:`confusion_figure`: the test confusion matrix of one (model, task, layer) probe;
- :func:`head_heatmap`, :func:`attention_map`, :func:`edge_example_html`: CodeSyntax head scores, one head's
  word-level attention with gold edges, and the correct/incorrect example of one edge.

Accuracy uses the app's red-yellow-blue scale fixed at 0-1 (red: poorly, blue: well). Words, labels, task and
model names are HTML-escaped (:func:`asc.viz.escape_text`): plotly renders HTML in them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from asc.viz import COLORSCALE, MODEL_COLORS, escape_text

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from probes.inspect.linear import ProbeResult

__all__ = ["LAYER_REFERENCES", "attention_map", "best_layer_heatmap", "confusion_figure", "edge_example_html",
           "head_heatmap", "layer_curves", "layer_heatmap", "normalized_heatmap"]


def _cell_text(values: np.ndarray, fmt: str = "{:.2f}") -> list[list[str]]:
    return [["" if v != v else fmt.format(v) for v in row] for row in values]


def layer_heatmap(table: pd.DataFrame, model: str, value: str = "accuracy",
                  tasks: Sequence[str] | None = None) -> go.Figure:
    """Task x layer heatmap of ``value`` (a column of :func:`probes.inspect.runs.results_table`) for ``model``.

    Rows follow ``tasks`` (default: the table's order); the dev-chosen layer of each task is boxed. Beside an
    accuracy (or control accuracy) heatmap, on the same scale, each task's two references (:func:`_baselines`):
    the majority class and the control task, so an accuracy near chance reads as such (selectivity is measured
    against the control already).
    """
    import plotly.graph_objects as go

    sub = table[table["model"] == model]
    order = [t for t in (tasks or list(dict.fromkeys(sub["task"]))) if t in set(sub["task"])]
    grid = sub.pivot_table(index="task", columns="layer", values=value, aggfunc="first").reindex(order)
    z = grid.to_numpy(dtype=float)
    signed = value == "selectivity"
    fig = go.Figure(go.Heatmap(
        z=z.tolist(), x=[int(c) for c in grid.columns], y=[escape_text(t) for t in grid.index], colorscale=COLORSCALE,
        zmin=-1.0 if signed else 0.0, zmax=1.0, text=_cell_text(z), texttemplate="%{text}",
        textfont={"size": 9}, colorbar={"title": value.replace("_", " ")},
        hovertemplate="task %{y}<br>layer %{x}<br>" + value.replace("_", " ") + " %{z:.3f}<extra></extra>"))
    best = sub[sub["best_layer"]]
    for _, row in best.iterrows():
        if row["task"] in order:
            fig.add_shape(type="rect", x0=row["layer"] - 0.5, x1=row["layer"] + 0.5, y0=order.index(row["task"]) - 0.5,
                          y1=order.index(row["task"]) + 0.5, line={"color": "black", "width": 2})
    fig.update_layout(title=escape_text(f"{model}: {value.replace('_', ' ')} per task and layer (box: layer chosen on dev)"),
                      xaxis_title="layer (0 = embeddings)", yaxis={"autorange": "reversed", "title": "task"},
                      height=max(260, 28 * len(order) + 140), margin={"l": 60, "r": 20, "t": 50, "b": 40})
    if not signed:
        fig.add_trace(_baselines(sub, order))
        fig.update_layout(xaxis={"domain": [0.0, 0.8]},
                          xaxis2={"domain": [0.83, 1.0], "anchor": "y", "side": "bottom", "title": "references"})
    return fig


LAYER_REFERENCES = ("majority", "control")  # the references beside a layer heatmap (layer_heatmap)


def _baselines(sub: pd.DataFrame, order: Sequence[str]) -> go.Heatmap:
    """Per task (rows of ``order``): the majority class (test accuracy of always guessing the most frequent training
    label) and the control task (the same probe on shuffled labels, mean test accuracy over the layers), on the
    accuracy scale, for the second x axis of :func:`layer_heatmap`. Hover gives the control's range over layers and
    the number of test samples behind every accuracy (``n_test``, when the table has it)."""
    import plotly.graph_objects as go

    z, hover = [], []
    for task in order:
        part = sub[sub["task"] == task]
        control = part["control_accuracy"].to_numpy(dtype=float)
        n = f"; {int(part['n_test'].iloc[0])} test samples" if "n_test" in part and len(part) else ""
        z.append([float(part["majority"].iloc[0]), float(np.mean(control))])
        hover.append([f"always the most frequent training label{n}",
                      f"shuffled labels, mean over layers (range {np.min(control):.2f}-{np.max(control):.2f}){n}"])
    values = np.array(z, dtype=float).reshape(len(order), len(LAYER_REFERENCES))
    return go.Heatmap(z=values.tolist(), x=list(LAYER_REFERENCES), y=[escape_text(t) for t in order], xaxis="x2",
                      yaxis="y", colorscale=COLORSCALE, zmin=0.0, zmax=1.0, showscale=False, text=_cell_text(values),
                      texttemplate="%{text}", textfont={"size": 9}, customdata=hover, name="references",
                      hovertemplate="task %{y}<br>%{x} %{z:.3f}: %{customdata}<extra></extra>")


def best_layer_heatmap(best: pd.DataFrame, tasks: Sequence[str] | None = None) -> go.Figure:
    """Model x task test accuracy at the layer chosen on dev; the cell text gives accuracy and layer."""
    import plotly.graph_objects as go

    order = [t for t in (tasks or list(dict.fromkeys(best["task"]))) if t in set(best["task"])]
    acc = best.pivot_table(index="model", columns="task", values="accuracy", aggfunc="first").reindex(columns=order)
    layer = best.pivot_table(index="model", columns="task", values="layer", aggfunc="first").reindex(
        index=acc.index, columns=order)
    z, lz = acc.to_numpy(dtype=float), layer.to_numpy(dtype=float)
    text = [["" if a != a else f"{a:.2f}<br>L{int(b)}" for a, b in zip(ra, rb)] for ra, rb in zip(z, lz)]
    fig = go.Figure(go.Heatmap(z=z.tolist(), x=[escape_text(t) for t in order], y=[escape_text(m) for m in acc.index],
                               colorscale=COLORSCALE, zmin=0.0, zmax=1.0,
                               text=text, texttemplate="%{text}", textfont={"size": 10},
                               colorbar={"title": "accuracy"},
                               hovertemplate="%{y}<br>%{x}: %{z:.3f}<extra></extra>"))
    fig.update_layout(title="Best layer per model and task (chosen on dev, test accuracy)",
                      height=max(220, 46 * len(acc.index) + 130), margin={"l": 120, "r": 20, "t": 50, "b": 40})
    return fig


def normalized_heatmap(norm: pd.DataFrame, baseline: str) -> go.Figure:
    """Table III: 0 = the baseline model, 100 = the task's best model; below the baseline is negative."""
    import plotly.graph_objects as go

    z = norm.to_numpy(dtype=float)
    fig = go.Figure(go.Heatmap(z=z.tolist(), x=[escape_text(t) for t in norm.columns],
                               y=[escape_text(m) for m in norm.index], colorscale=COLORSCALE,
                               zmin=-100.0, zmax=100.0, zmid=0.0, text=_cell_text(z, "{:.0f}"),
                               texttemplate="%{text}", colorbar={"title": "normalized"},
                               hovertemplate="%{y}<br>%{x}: %{z:.1f}<extra></extra>"))
    fig.update_layout(title=escape_text(f"Accuracy normalized between the baseline {baseline} (0) and the best model (100)"),
                      height=max(220, 46 * len(norm.index) + 130), margin={"l": 120, "r": 20, "t": 50, "b": 40})
    return fig


def layer_curves(table: pd.DataFrame, task: str, x: str = "layer") -> go.Figure:
    """Accuracy per layer for every model on ``task`` (``x`` = ``layer`` or relative ``depth``), with the
    control task (dashed) and the majority baseline (dotted)."""
    import plotly.graph_objects as go

    sub = table[table["task"] == task]
    fig = go.Figure()
    for i, (raw_model, part) in enumerate(sub.groupby("model", sort=False)):
        model = escape_text(raw_model)  # legend and hover render HTML
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
    fig.update_layout(title=escape_text(f"{task}: test accuracy per layer (dashed: control task with shuffled labels)"),
                      xaxis_title="layer (0 = embeddings)" if x == "layer" else "relative depth (0 = embeddings, 1 = last)",
                      yaxis={"title": "accuracy", "range": [0, 1.02]}, height=380,
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig


def confusion_figure(result: ProbeResult, layer: int) -> go.Figure:
    """Test confusion matrix (rows gold, columns predicted) of ``result``'s probe at ``layer``."""
    import plotly.graph_objects as go

    counts = result.confusion(layer)
    labels = [escape_text(label) for label in result.labels]  # from a task file: user text
    fig = go.Figure(go.Heatmap(z=counts.tolist(), x=labels, y=labels, colorscale="Blues", text=counts.tolist(),
                               texttemplate="%{text}", colorbar={"title": "samples"},
                               hovertemplate="gold %{y}<br>predicted %{x}<br>%{z} samples<extra></extra>"))
    fig.update_layout(title=escape_text(f"{result.model} · {result.task} · layer {layer}: accuracy {result.accuracy[layer]:.3f}"),
                      xaxis_title="predicted", yaxis={"title": "gold", "autorange": "reversed"},
                      height=max(300, 34 * len(labels) + 140), margin={"l": 80, "r": 20, "t": 50, "b": 60})
    return fig


def head_heatmap(scores: np.ndarray, relation: str, best: tuple[int, int] | None = None,
                 label: str = "score") -> go.Figure:
    """Layer x head scores of one relation (``HeadScores.layer_head``); the best head (chosen on val) is boxed."""
    import plotly.graph_objects as go

    z = np.asarray(scores, dtype=float)
    fig = go.Figure(go.Heatmap(z=z.tolist(), x=list(range(z.shape[1])), y=list(range(z.shape[0])),
                               colorscale=COLORSCALE, zmin=0.0, zmax=1.0, colorbar={"title": label},
                               hovertemplate="layer %{y}, head %{x}: %{z:.3f}<extra></extra>"))
    if best is not None:
        layer, head = best
        fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5,
                      line={"color": "black", "width": 2})
    fig.update_layout(title=escape_text(f"{relation}: {label} of every head (box: best on val)"), xaxis_title="head",
                      yaxis={"title": "layer", "autorange": "reversed"}, height=max(300, 16 * z.shape[0] + 140),
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig


def _word_label(tokens, i: int, width: int = 14) -> str:
    """``index:word`` for an axis tick: layout words as symbols, long words (docstrings) cut to ``width``."""
    t = tokens[i]
    shown = {"\n": "⏎", "\r\n": "⏎", "": "⇤"}.get(t, t if t.strip() else "⇥")
    shown = " ".join(shown.split())
    return f"{i}:{shown[:width - 1]}…" if len(shown) > width else f"{i}:{shown}"


ATTENTION_FONT_PX = 10  # the attention map's word labels (and no smaller: readable at the page's size)
_LABEL_PX = ATTENTION_FONT_PX + 3  # the room one label takes across its axis: its font and a gap
_ATTENTION_MARGIN = {"l": 120, "r": 150, "t": 50, "b": 120}  # room for labels, the color bar and the legend


def _labelled(n: int, step: int, first: Sequence[int]) -> list[int]:
    """The word positions labelled on an axis where only every ``step``-th fits: those of ``first`` (the gold edges'
    words), then evenly spaced ones, each at least ``step`` positions from every label already taken."""
    if step <= 1:
        return list(range(n))
    taken: list[int] = []
    for i in [*dict.fromkeys(first), *range(0, n, step)]:
        if 0 <= i < n and all(abs(i - j) >= step for j in taken):
            taken.append(i)
    return sorted(taken)


def attention_map(matrix: np.ndarray, tokens: Sequence[str], edges: Sequence[tuple[int, int, int]], causal: bool,
                  title: str = "", max_width: int = 1520) -> go.Figure:
    """One head's word x word attention (rows attend to columns) with the relation's gold edges overlaid:
    encoders mark (head row, dependent first column), decoders (dependent first row, head column).

    Drawn at most ``max_width`` px wide (the page passes its panel's width) with square cells. Word labels are
    :data:`ATTENTION_FONT_PX` px: every word is labelled while the cells are at least that tall; on smaller cells
    the gold edges' words and evenly spaced others are, the axis title says so, and hovering a cell names both of
    its words. The color bar and the gold-edge legend sit to the right of the matrix, never over it."""
    import plotly.graph_objects as go

    z = np.asarray(matrix, dtype=float)
    n = len(tokens)
    labels = [escape_text(_word_label(tokens, i)) for i in range(n)]  # words of the code: no HTML
    fig = go.Figure(go.Heatmap(z=z.tolist(), x=labels, y=labels, colorscale="Blues", zmin=0.0,
                               colorbar={"title": "attention", "len": 0.6, "y": 1.0, "yanchor": "top"},
                               hovertemplate="from %{y}<br>to %{x}<br>%{z:.3f}<extra></extra>"))
    rows = [(s if causal else h) for h, s, _ in edges]
    cols = [(h if causal else s) for h, s, _ in edges]
    if edges:
        fig.add_trace(go.Scatter(x=[labels[c] for c in cols], y=[labels[r] for r in rows], mode="markers",
                                 name="gold edge", marker={"symbol": "circle-open", "size": 12, "color": "#d62728",
                                                           "line": {"width": 2}},
                                 hovertemplate="gold edge: %{y} → %{x}<extra></extra>"))
    margin = _ATTENTION_MARGIN
    side = max(400, min(14 * n, max_width - margin["l"] - margin["r"]))  # the matrix, px
    step = max(1, math.ceil(_LABEL_PX * n / side))  # every step-th word's label fits
    axes: dict[str, dict] = {}
    for axis, words, name in (("xaxis", cols, "attended word"), ("yaxis", rows, "attending word")):
        shown = _labelled(n, step, words)
        if axis == "xaxis" and step > 1:  # the vertical title has no room for the note
            name += f" (1 word in {step} labelled, and the gold edges' words: hover a cell for its two words)"
        axes[axis] = {"title": name, "tickfont": {"size": ATTENTION_FONT_PX}, "tickmode": "array",
                      "tickvals": [labels[i] for i in shown], "ticktext": [labels[i] for i in shown],
                      "automargin": True}
    axes["xaxis"]["tickangle"] = -90  # upright labels take a font's height each, as on the y axis
    axes["yaxis"]["autorange"] = "reversed"
    fig.update_layout(title=escape_text(title or "attention of one head"), height=side + margin["t"] + margin["b"],
                      width=side + margin["l"] + margin["r"], margin=margin, showlegend=bool(edges),
                      legend={"x": 1.02, "xanchor": "left", "y": 0.0, "yanchor": "bottom"}, **axes)
    return fig


def edge_example_html(code: str, spans: Sequence[tuple[int, int]], edge: tuple[int, int, int], attended: int,
                      causal: bool) -> str:
    """The paper's correct/incorrect example: the code with the head word (orange), the gold dependent (green)
    and the word the head's top attention goes to (blue outline); for decoders the dependent's first word
    attends back, so the attended word is compared with the head instead."""
    import html

    head, first, last = edge
    gold = set(range(first, last + 1))
    target_ok = (attended == head) if causal else (attended == first)
    marks: dict[int, str] = {head: "background:#ffbf69"}
    for w in gold:
        marks[w] = marks.get(w, "") + ";background:#b7e4c7"
    marks[attended] = marks.get(attended, "") + ";outline:2px solid #1f77b4"
    out, pos = [], 0
    for w, (a, b) in enumerate(spans):
        if w not in marks or b <= a:
            continue
        out.append(html.escape(code[pos:a]))
        out.append(f"<span style='{marks[w]}'>{html.escape(code[a:b])}</span>")
        pos = b
    out.append(html.escape(code[pos:]))
    verdict = "correct" if target_ok else "incorrect"
    color = "#2b8a3e" if target_ok else "#c92a2a"
    return (f"<div style='font-weight:600;color:{color}'>{verdict}: top-1 attention "
            f"{'from the dependent goes to' if causal else 'from the head goes to'} the outlined word</div>"
            f"<pre style='font-size:13px;line-height:1.5'>{''.join(out)}</pre>"
            "<div style='font-size:12px'><span style='background:#ffbf69'>head</span> "
            "<span style='background:#b7e4c7'>gold dependent</span> "
            "<span style='outline:2px solid #1f77b4'>attended</span></div>")
