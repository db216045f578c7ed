"""Pure figure builders for AsC-Causal: the structural causal model and a treatment's data.

* :func:`causal_graph_figure`: confounders Z -> treatment T, Z -> outcome Y, T -> Y (the backdoor
  graph of the paper's AsC-Causal);
* :func:`treatment_scatter`: one point per snippet, a concept's AsC-Eval value against the loss (snippet ids,
  which come from corpus files, HTML-escaped).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asc.viz.html import escape_text

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["causal_graph_figure", "treatment_scatter"]


def causal_graph_figure(treatment: str = "T: concept value", outcome: str = "Y: loss",
                        confounders: tuple[str, ...] = ("seq_size", "ast_levels", "n_nodes", "complexity"),
                        ) -> go.Figure:
    """The structural causal model drawn: confounders on the left, treatment and outcome on the right."""
    import plotly.graph_objects as go

    pos = {z: (0.0, 1.0 - i / max(1, len(confounders) - 1)) for i, z in enumerate(confounders)}
    pos[treatment], pos[outcome] = (1.0, 0.75), (2.0, 0.25)
    edges = [(z, treatment) for z in confounders] + [(z, outcome) for z in confounders] + [(treatment, outcome)]
    fig = go.Figure()
    for a, b in edges:
        (x0, y0), (x1, y1) = pos[a], pos[b]
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", showarrow=True,
                           arrowhead=3, arrowsize=1.2, arrowwidth=1.4 if b == outcome and a == treatment else 1,
                           arrowcolor="#c0392b" if a == treatment else "#999", standoff=14, startstandoff=14)
    names = list(pos)
    fig.add_trace(go.Scatter(x=[pos[n][0] for n in names], y=[pos[n][1] for n in names], mode="markers+text",
                             text=names, textposition=["middle left"] * len(confounders) + ["top center", "middle right"],
                             marker={"size": 18, "color": ["#bbb"] * len(confounders) + ["#4c78a8", "#c0392b"]},
                             hoverinfo="text", showlegend=False))
    fig.update_layout(height=300, xaxis={"visible": False, "range": [-0.8, 2.8]}, yaxis={"visible": False,
                      "range": [-0.15, 1.15]}, plot_bgcolor="white", margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title={"text": "Causal graph: confounders Z → T, Z → Y, T → Y (backdoor adjustment on Z)",
                             "font": {"size": 13}})
    return fig


def treatment_scatter(table: pd.DataFrame, treatment: str, outcome: str = "loss",
                      color: str = "seq_size") -> go.Figure:
    """Snippets as points: a treatment's value against the loss (only snippets where it is present)."""
    import plotly.graph_objects as go

    sub = table.dropna(subset=[treatment, outcome])
    fig = go.Figure(go.Scatter(
        x=sub[treatment], y=sub[outcome], mode="markers", text=[escape_text(i) for i in sub.index],
        marker={"color": sub[color], "colorscale": "Viridis", "showscale": True, "size": 7, "opacity": 0.8,
                "colorbar": {"title": {"text": color}}},
        hovertemplate="%{text}<br>value %{x:.3f}<br>loss %{y:.3f}<extra></extra>"))
    fig.update_layout(height=360, xaxis={"title": f"{treatment} (snippet AsC-Eval)", "range": [0, 1.02]},
                      yaxis={"title": "cross-entropy (nats/token)"}, plot_bgcolor="white",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title={"text": f"{treatment} vs loss ({len(sub)} snippets where it is present)",
                             "font": {"size": 13}})
    return fig
