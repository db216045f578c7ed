"""Pure figure builders for corpus-level AsC-Eval (tables from :mod:`asc.corpus.summary` -> plotly / Styler).

* :func:`category_bars`: per-category bootstrapped medians with 95% error bars, one color per model, the threshold
  line, and each bar below it hatched with a red outline (paper Fig. 3);
* :func:`value_distribution`: node values per model as box plots (paper Fig. 6), from precomputed box
  statistics (:func:`asc.corpus.summary.box_table`);
* :func:`concept_treemap`: model -> category -> node type, sized by node count, colored by median
  value on the fixed red-to-blue confidence scale;
* :func:`difference_bars`: model A minus model B on the model difference scale (purple: A more confident, orange: B),
  with its color bar;
* :func:`styled_table`: Table I with cells red below / blue at or above the threshold (paler within 0.1 of it), every
  cell text (a number to 3 decimals, or ``absent``), so no column mixes words and numbers.

Colors are those of :mod:`asc.viz.colors`, one scale per quantity.

Nothing is computed here beyond layout; inputs are never modified. Model and corpus names are HTML-escaped
(:func:`asc.viz.html.escape_text`): they come from what users typed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from asc.concepts import CONFIDENCE_LINE, GLOBAL
from asc.missing import ABSENT
from asc.viz.colors import BELOW_LINE, COLORSCALE, DIFFERENCE_SCALE, MODEL_COLORS, line_color, text_color
from asc.viz.html import escape_text

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go
    from pandas.io.formats.style import Styler

__all__ = ["category_bars", "value_distribution", "concept_treemap", "difference_bars", "styled_table"]

HATCH = "/"  # the pattern of a bar below the confidence line


def category_bars(summary: pd.DataFrame, threshold: float = CONFIDENCE_LINE) -> go.Figure:
    """Grouped bars: x = category (Global first), one bar per model (its color in the legend), error bars = bootstrap
    interval; a bar below ``threshold`` is hatched with a red outline, drawn over it by a trace of its own (one legend
    entry says so), so each model's legend keeps its plain color."""
    import plotly.graph_objects as go

    fig = go.Figure()
    hatches: list[go.Bar] = []
    for k, ((model, corpus), rows) in enumerate(summary.groupby(["model", "corpus"], sort=False)):
        fig.add_trace(go.Bar(
            name=escape_text(f"{model} · {corpus}" if corpus else model), x=rows["category"], y=rows["median"],
            marker_color=MODEL_COLORS[k % len(MODEL_COLORS)], offsetgroup=str(k),
            error_y={"type": "data", "symmetric": False, "array": (rows["ci_high"] - rows["median"]).tolist(),
                     "arrayminus": (rows["median"] - rows["ci_low"]).tolist(), "thickness": 1.2, "width": 3},
            customdata=np.stack([rows["ci_low"], rows["ci_high"], rows["n_nodes"]], axis=1),
            hovertemplate="%{x}: %{y:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}], %{customdata[2]} nodes"
                          "<extra>%{fullData.name}</extra>"))
        below = rows["median"] < threshold
        if below.any():  # the same bars again, where below the line, hatched over the model's color
            hatches.append(go.Bar(
                name=f"below {threshold:g} (hatched)", x=rows["category"], y=rows["median"].where(below),
                offsetgroup=str(k), legendgroup="below", showlegend=not hatches, hoverinfo="skip",
                marker={"color": "rgba(0,0,0,0)", "line": {"color": BELOW_LINE, "width": 2},
                        "pattern": {"shape": HATCH, "fgcolor": BELOW_LINE, "bgcolor": "rgba(0,0,0,0)",
                                    "solidity": 0.3}}))
    for trace in hatches:
        fig.add_trace(trace)
    fig.add_hline(y=threshold, line={"dash": "dash", "color": "#2a7f2a"}, annotation_text=f"{threshold:g}",
                  annotation_position="top left")
    fig.update_layout(barmode="group", height=380, yaxis={"range": [0, 1.05], "title": "bootstrapped median"},
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white",
                      title={"text": "AsC-Eval per category (95% bootstrap intervals)", "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.25})
    return fig


def value_distribution(boxes: pd.DataFrame, category: str | None = None) -> go.Figure:
    """Box plots of node values per model (paper Fig. 6) from :func:`asc.corpus.summary.box_table` rows:
    statistics computed from histograms, so a run of millions of nodes draws as fast as one of hundreds."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for k, row in enumerate(boxes.itertuples()):
        if not row.n:
            continue
        name = escape_text(str(row.model))
        fig.add_trace(go.Box(x=[name], name=name, q1=[row.q1], median=[row.median], q3=[row.q3], mean=[row.mean],
                             lowerfence=[row.lowerfence], upperfence=[row.upperfence], boxpoints=False,
                             marker_color=MODEL_COLORS[k % len(MODEL_COLORS)]))
    fig.update_layout(height=380, yaxis={"range": [0, 1.02], "title": "node value"}, showlegend=False,
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white",
                      title={"text": f"Distribution of node values ({category or GLOBAL})", "font": {"size": 13}})
    return fig


def concept_treemap(types: pd.DataFrame) -> go.Figure:
    """Treemap model -> category -> node type from :func:`asc.corpus.summary.type_table` rows (several models ok)."""
    import plotly.graph_objects as go

    ids: list[str] = []
    labels: list[str] = []
    parents: list[str] = []
    sizes: list[int] = []
    colors: list[float] = []
    hover: list[str] = []

    def add(node_id: str, label: str, parent: str, size: int, color: float, text: str) -> None:
        ids.append(node_id)
        labels.append(label)
        parents.append(parent)
        sizes.append(size)
        colors.append(color)
        hover.append(text)

    for raw_model, by_model in types.groupby("model", sort=False):
        model = escape_text(raw_model)  # a label plotly renders as HTML
        add(model, model, "", int(by_model["nodes"].sum()), float(by_model["median"].median()),
            f"{int(by_model['nodes'].sum())} nodes")
        for cat, by_cat in by_model.groupby("category", sort=False):
            cid = f"{model}/{cat}"
            add(cid, cat, model, int(by_cat["nodes"].sum()),
                float(np.average(by_cat["median"], weights=by_cat["nodes"])), f"{int(by_cat['nodes'].sum())} nodes")
            for row in by_cat.itertuples():
                add(f"{cid}/{row.type}", row.type, cid, int(row.nodes), float(row.median),
                    f"{int(row.nodes)} nodes in {int(row.snippets)} snippets, median {row.median:.3f}")
    fig = go.Figure(go.Treemap(ids=ids, labels=labels, parents=parents, values=sizes, branchvalues="total",
                               marker={"colors": colors, "colorscale": COLORSCALE, "cmin": 0, "cmax": 1,
                                       "showscale": True, "colorbar": {"title": {"text": "median"}}},
                               customdata=hover, hovertemplate="<b>%{label}</b><br>%{customdata}<extra></extra>"))
    fig.update_layout(height=520, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title={"text": "Model › category › node type (size = nodes, color = median value)",
                             "font": {"size": 13}})
    return fig


def difference_bars(diff: pd.DataFrame, label: str = "category", top: int = 30) -> go.Figure:
    """Horizontal bars of A - B from :func:`asc.corpus.summary.difference_table` (largest |difference| first)."""
    import plotly.graph_objects as go

    rows = diff.dropna(subset=["difference"]).head(top)
    names = rows[label] if label == "category" else rows["category"] + " · " + rows["type"]
    a, b = (escape_text(diff["model_a"].iloc[0]), escape_text(diff["model_b"].iloc[0])) if len(diff) else ("A", "B")
    fig = go.Figure(go.Bar(
        x=rows["difference"], y=names, orientation="h",
        marker={"color": rows["difference"], "colorscale": DIFFERENCE_SCALE, "cmin": -0.5, "cmax": 0.5,
                "showscale": True, "colorbar": {"title": {"text": f"{a} − {b}"}, "thickness": 12}},
        hovertemplate="%{y}: %{x:+.3f}<extra></extra>"))
    fig.update_layout(height=max(260, 22 * len(rows) + 80), yaxis={"autorange": "reversed"},
                      xaxis={"title": f"{a} − {b} (median node value)", "zeroline": True},
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white",
                      title={"text": f"Where {a} and {b} differ (purple: {a} more confident, orange: {b})",
                             "font": {"size": 13}})
    return fig


def styled_table(wide: pd.DataFrame, threshold: float = CONFIDENCE_LINE) -> Styler:
    """Table I as shown (a pandas Styler): a row per category, after a row of snippet counts, and a column per run
    (``model · corpus``), so that it fits a panel however many categories there are. Every cell is text: a count with
    thousands separators, a value to 3 decimals, ``absent`` for a category with no node in a run, so no column mixes
    words and numbers (Arrow, which carries a table to the browser, takes one type per column). Value cells are red
    below ``threshold``, blue at or above, paler within 0.1 of it (:func:`asc.viz.colors.line_color`; black or white
    text: contrast >= 4.5); ``absent`` is grey."""
    import pandas as pd

    value_rows = [c for c in wide.columns if c not in ("model", "corpus", "snippets")]
    runs = [f"{m} · {c}" for m, c in zip(wide["model"], wide["corpus"], strict=True)]
    runs = [r if runs.count(r) == 1 else f"{r} ({k + 1})" for k, r in enumerate(runs)]  # columns must be unique
    numbers = wide.set_index(pd.Index(runs))[["snippets", *value_rows]].T.astype(float)
    is_count = numbers.index == "snippets"

    def text(v: float, count: bool) -> str:
        if math.isnan(v):
            return ABSENT
        return f"{int(v):,}" if count else f"{v:.3f}"

    cells = pd.DataFrame([[text(v, bool(c)) for v in row] for row, c in zip(numbers.to_numpy(), is_count)],
                         index=numbers.index, columns=runs)
    shown = cells.rename_axis("category").reset_index()
    styles = pd.DataFrame("", index=shown.index, columns=shown.columns)
    for i, (row, count) in enumerate(zip(numbers.to_numpy(), is_count)):
        for run, v in zip(runs, row):
            if math.isnan(v):
                styles.loc[i, run] = "color:#6b6b6b"  # grey on white: contrast 5.3
            elif not count:
                shade = line_color(float(v), threshold)
                styles.loc[i, run] = f"background-color:{shade};color:{text_color(shade)}"  # contrast >= 4.5
    return shown.style.apply(lambda _: styles, axis=None)
