"""glueCode figures, pure (tables in, plotly figures out): accuracy by context level, confusion, candidates.

- :func:`context_figure`: the paper's local-to-global question in one figure: one panel per task, the context
  level on x (function, file, file + call graph), the task's main metric on y with its bootstrap 95% interval,
  one line per model, the trivial baseline as a dashed line.
- :func:`confusion_figure`: a (true class x predicted class) count table as a heatmap, rows shaded by their
  share so that rare classes read as well as common ones.
- :func:`candidates_figure`: one item's candidates by their share of the probability mass among candidates,
  the right answer and the model's answer marked.

Inputs are :mod:`probes.gluecode.browse`'s tables; text from corpora and model names is escaped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from asc.viz import MODEL_COLORS, escape_text
from probes.gluecode.browse import MAIN_METRIC
from probes.gluecode.items import CONTEXTS, TASKS

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["CONTEXT_LABELS", "candidates_figure", "confusion_figure", "context_figure"]

CONTEXT_LABELS = {"function": "function", "file": "file", "callgraph": "file + call graph"}
_LABEL_COLOR, _WRONG_COLOR, _OTHER_COLOR = "#2166ac", "#b2182b", "#c7c7c7"


def context_figure(frame: pd.DataFrame, title: str = "Does context beyond the function help? (test split)") -> go.Figure:
    """One panel per task of ``frame`` (:func:`probes.gluecode.browse.context_frame`), a line per model across
    the context levels with 95% error bars; dashed: the task's trivial baseline."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    tasks = [t for t in TASKS if t in set(frame["task"])] + sorted(set(frame["task"]) - set(TASKS))
    fig = make_subplots(rows=1, cols=max(len(tasks), 1), shared_yaxes=True, horizontal_spacing=0.03,
                        subplot_titles=[f"{t} ({MAIN_METRIC.get(t, 'accuracy')})" for t in tasks] or [""])
    models = list(dict.fromkeys(frame["model"]))
    labels = [CONTEXT_LABELS[c] for c in CONTEXTS]
    for j, task in enumerate(tasks, 1):
        of_task = frame[frame["task"] == task]
        for k, model in enumerate(models):
            rows = of_task[of_task["model"] == model]
            if not len(rows):
                continue
            x = [CONTEXT_LABELS.get(c, c) for c in rows["context"]]
            y = rows["value"].to_numpy(dtype=float)
            fig.add_trace(go.Scatter(
                x=x, y=y, mode="lines+markers", name=escape_text(model), legendgroup=escape_text(model),
                showlegend=j == 1, line={"color": MODEL_COLORS[k % len(MODEL_COLORS)]},
                error_y={"type": "data", "symmetric": False, "array": (rows["ci_high"].to_numpy() - y).tolist(),
                         "arrayminus": (y - rows["ci_low"].to_numpy()).tolist(), "thickness": 1},
                customdata=rows["n"].tolist(),
                hovertemplate=f"{escape_text(model)} · {task}<br>%{{x}}: %{{y:.3f}} (n=%{{customdata}})<extra></extra>"),
                row=1, col=j)
        base = of_task["baseline"].dropna()
        if len(base):
            fig.add_trace(go.Scatter(x=[labels[0], labels[-1]], y=[float(base.iloc[0])] * 2, mode="lines",
                                     name="trivial baseline", legendgroup="baseline", showlegend=j == 1,
                                     line={"color": "#777", "dash": "dash", "width": 1},
                                     hovertemplate=f"{task} trivial baseline: %{{y:.3f}}<extra></extra>"), row=1, col=j)
        fig.update_xaxes(categoryorder="array", categoryarray=labels, tickangle=-30, row=1, col=j)
    fig.update_yaxes(range=[0, 1], title_text="score", row=1, col=1)
    fig.update_layout(title=escape_text(title), height=380, margin={"l": 50, "r": 20, "t": 70, "b": 80},
                      legend={"orientation": "h", "y": -0.35})
    return fig


def confusion_figure(table: pd.DataFrame, title: str) -> go.Figure:
    """``table`` (rows: true class, columns: predicted; :func:`probes.gluecode.browse.confusion`) as a heatmap
    of row shares with the counts written in."""
    import plotly.graph_objects as go

    counts = table.to_numpy(dtype=float)
    totals = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    cols = [escape_text(c) for c in table.columns]
    rows = [escape_text(r) for r in table.index]
    fig = go.Figure(go.Heatmap(z=share.tolist(), x=cols, y=rows, colorscale="Blues", zmin=0, zmax=1,
                               text=counts.astype(int).tolist(), texttemplate="%{text}",
                               colorbar={"title": "row share"},
                               hovertemplate="true %{y}<br>predicted %{x}<br>%{text} items (%{z:.0%} of the row)"
                                             "<extra></extra>"))
    fig.update_layout(title=escape_text(title), xaxis_title="predicted",
                      yaxis={"title": "true", "autorange": "reversed", "type": "category"},
                      xaxis={"type": "category"}, height=max(300, 34 * len(rows) + 150),
                      margin={"l": 90, "r": 20, "t": 50, "b": 60})
    return fig


def candidates_figure(frame: pd.DataFrame, title: str, top: int = 15) -> go.Figure:
    """The ``top`` candidates of ``frame`` (:func:`probes.gluecode.browse.candidate_table`) as horizontal bars of
    their share; blue: the right answer, red: the model's answer when wrong, grey: the others."""
    import plotly.graph_objects as go

    shown = frame.head(top)
    if len(frame) > top and frame["is_label"].any() and not shown["is_label"].any():
        shown = pd.concat([shown, frame[frame["is_label"]]])  # the right answer is always drawn
    colors = [_LABEL_COLOR if lab else (_WRONG_COLOR if pred else _OTHER_COLOR)
              for lab, pred in zip(shown["is_label"], shown["is_prediction"])]
    names = [escape_text(c) + ("  ✓" if lab else "") for c, lab in zip(shown["candidate"], shown["is_label"])]
    fig = go.Figure(go.Bar(x=shown["share"].tolist(), y=names, orientation="h", marker={"color": colors},
                           customdata=shown["loglik"].tolist(),
                           hovertemplate="%{y}<br>share %{x:.3f}<br>log-likelihood %{customdata:.2f}<extra></extra>"))
    fig.update_layout(title=escape_text(title), xaxis={"title": "share among the candidates", "range": [0, 1]},
                      yaxis={"autorange": "reversed", "type": "category"}, height=max(260, 24 * len(shown) + 120),
                      margin={"l": 140, "r": 20, "t": 50, "b": 50})
    return fig
