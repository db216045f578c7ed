"""Pure figure builders for corpus-level AsC-Eval (tables from :mod:`asc.compare` -> plotly / Styler).

* :func:`category_bars`: per-category bootstrapped medians with 95% error bars, one color per model,
  and the threshold line (paper Fig. 3);
* :func:`value_distribution`: node values per model as box plots (paper Fig. 6);
* :func:`concept_treemap`: model -> category -> node type, sized by node count, colored by median
  value on the fixed red-blue 0-1 scale;
* :func:`difference_bars`: model A minus model B, diverging colors;
* :func:`styled_table`: Table I with cells red below / blue above the threshold;
* :func:`causal_graph_figure` and :func:`treatment_scatter`: AsC-Causal's graph and data.

Nothing is computed here beyond layout; inputs are never modified.
"""

from __future__ import annotations

import math

import numpy as np

from .concepts import GLOBAL
from .figures import COLORSCALE, value_color

__all__ = ["category_bars", "value_distribution", "concept_treemap", "difference_bars", "styled_table",
           "causal_graph_figure", "treatment_scatter"]

MODEL_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d", "#e45756")


def category_bars(summary, threshold: float = 0.6):
    """Grouped bars: x = category (Global first), one bar per model, error bars = bootstrap interval."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, ((model, corpus), rows) in enumerate(summary.groupby(["model", "corpus"], sort=False)):
        fig.add_trace(go.Bar(
            name=f"{model} · {corpus}" if corpus else model, x=rows["category"], y=rows["median"],
            marker_color=MODEL_COLORS[k % len(MODEL_COLORS)],
            error_y={"type": "data", "symmetric": False, "array": (rows["ci_high"] - rows["median"]).tolist(),
                     "arrayminus": (rows["median"] - rows["ci_low"]).tolist(), "thickness": 1.2, "width": 3},
            customdata=np.stack([rows["ci_low"], rows["ci_high"], rows["n_nodes"]], axis=1),
            hovertemplate="%{x}: %{y:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}], %{customdata[2]} nodes"
                          "<extra>%{fullData.name}</extra>"))
    fig.add_hline(y=threshold, line={"dash": "dash", "color": "#2a7f2a"}, annotation_text=f"{threshold:g}",
                  annotation_position="top left")
    fig.update_layout(barmode="group", height=380, yaxis={"range": [0, 1.05], "title": "bootstrapped median"},
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white",
                      title={"text": "AsC-Eval per category (95% bootstrap intervals)", "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.25})
    return fig


def value_distribution(nodes_by_model: dict, category: str | None = None):
    """Box plots of node values (categorized nodes, or one ``category``) per model."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, (model, nodes) in enumerate(nodes_by_model.items()):
        sub = nodes[nodes["value"].notna() & nodes["category"].notna()]
        if category and category != GLOBAL:
            sub = sub[sub["category"] == category]
        fig.add_trace(go.Box(y=sub["value"], name=model, boxpoints=False, marker_color=MODEL_COLORS[k % 6],
                             boxmean=True))
    fig.update_layout(height=380, yaxis={"range": [0, 1.02], "title": "node value"}, showlegend=False,
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white",
                      title={"text": f"Distribution of node values ({category or GLOBAL})", "font": {"size": 13}})
    return fig


def concept_treemap(types):
    """Treemap model -> category -> node type from :func:`asc.compare.type_table` rows (several models ok)."""
    import plotly.graph_objects as go

    ids, labels, parents, sizes, colors, hover = [], [], [], [], [], []
    for model, by_model in types.groupby("model", sort=False):
        ids.append(model), labels.append(model), parents.append(""), sizes.append(int(by_model["nodes"].sum()))
        colors.append(float(by_model["median"].median())), hover.append(f"{int(by_model['nodes'].sum())} nodes")
        for cat, by_cat in by_model.groupby("category", sort=False):
            cid = f"{model}/{cat}"
            ids.append(cid), labels.append(cat), parents.append(model), sizes.append(int(by_cat["nodes"].sum()))
            colors.append(float(np.average(by_cat["median"], weights=by_cat["nodes"])))
            hover.append(f"{int(by_cat['nodes'].sum())} nodes")
            for row in by_cat.itertuples():
                ids.append(f"{cid}/{row.type}"), labels.append(row.type), parents.append(cid)
                sizes.append(int(row.nodes)), colors.append(float(row.median))
                hover.append(f"{int(row.nodes)} nodes in {int(row.snippets)} snippets, median {row.median:.3f}")
    fig = go.Figure(go.Treemap(ids=ids, labels=labels, parents=parents, values=sizes, branchvalues="total",
                               marker={"colors": colors, "colorscale": COLORSCALE, "cmin": 0, "cmax": 1,
                                       "showscale": True, "colorbar": {"title": {"text": "median"}}},
                               customdata=hover, hovertemplate="<b>%{label}</b><br>%{customdata}<extra></extra>"))
    fig.update_layout(height=520, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title={"text": "Model › category › node type (size = nodes, color = median value)",
                             "font": {"size": 13}})
    return fig


def difference_bars(diff, label: str = "category", top: int = 30):
    """Horizontal bars of A - B from :func:`asc.compare.difference_table` (largest |difference| first)."""
    import plotly.graph_objects as go

    rows = diff.dropna(subset=["difference"]).head(top)
    names = rows[label] if label == "category" else rows["category"] + " · " + rows["type"]
    a, b = (diff["model_a"].iloc[0], diff["model_b"].iloc[0]) if len(diff) else ("A", "B")
    fig = go.Figure(go.Bar(
        x=rows["difference"], y=names, orientation="h",
        marker={"color": rows["difference"], "colorscale": "RdBu", "cmin": -0.5, "cmax": 0.5},
        hovertemplate="%{y}: %{x:+.3f}<extra></extra>"))
    fig.update_layout(height=max(260, 22 * len(rows) + 80), yaxis={"autorange": "reversed"},
                      xaxis={"title": f"{a} − {b} (median node value)", "zeroline": True},
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white",
                      title={"text": f"Where {a} and {b} differ (blue: {a} more confident)", "font": {"size": 13}})
    return fig


def styled_table(wide, threshold: float = 0.6):
    """Table I as a pandas Styler: value cells red below ``threshold``, blue at or above, 3 decimals."""
    value_cols = [c for c in wide.columns if c not in ("model", "corpus", "snippets")]

    def cell(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "color:#999"
        strong = value_color(0.15 if v < threshold else 0.9)
        return f"background-color:{strong};color:white" if abs(v - threshold) > 0.1 else \
            f"background-color:{value_color(0.35 if v < threshold else 0.7)}"

    return wide.style.map(cell, subset=value_cols).format("{:.3f}", subset=value_cols, na_rep="absent")


def causal_graph_figure(treatment: str = "T: concept value", outcome: str = "Y: loss",
                        confounders: tuple[str, ...] = ("seq_size", "ast_levels", "n_nodes", "complexity")):
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


def treatment_scatter(table, treatment: str, outcome: str = "loss", color: str = "seq_size"):
    """Snippets as points: a treatment's value against the loss (only snippets where it is present)."""
    import plotly.graph_objects as go

    sub = table.dropna(subset=[treatment, outcome])
    fig = go.Figure(go.Scatter(
        x=sub[treatment], y=sub[outcome], mode="markers", text=sub.index.astype(str),
        marker={"color": sub[color], "colorscale": "Viridis", "showscale": True, "size": 7, "opacity": 0.8,
                "colorbar": {"title": {"text": color}}},
        hovertemplate="%{text}<br>value %{x:.3f}<br>loss %{y:.3f}<extra></extra>"))
    fig.update_layout(height=360, xaxis={"title": f"{treatment} (snippet AsC-Eval)", "range": [0, 1.02]},
                      yaxis={"title": "cross-entropy (nats/token)"}, plot_bgcolor="white",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title={"text": f"{treatment} vs loss ({len(sub)} snippets where it is present)",
                             "font": {"size": 13}})
    return fig


def rating_bars(counts):
    """User-study ratings: stacked bars of Likert answers per group, one panel per rating question.

    ``counts`` is :func:`asc.study_store.rating_counts` (group, question, level, label, count).
    """
    import plotly.express as px

    order = ["Strongly agree", "Agree", "Neutral", "Disagree", "Strongly disagree"]
    fig = px.bar(counts, x="group", y="count", color="label", facet_col="question", barmode="stack",
                 category_orders={"label": order},
                 color_discrete_sequence=["#2c7bb6", "#abd9e9", "#ffffbf", "#fdae61", "#d7191c"],
                 title="Ratings per group and question")
    fig.update_layout(legend_title_text="", height=380, margin={"l": 40, "r": 20, "t": 60, "b": 40})
    return fig
