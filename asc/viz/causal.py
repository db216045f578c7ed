"""Pure figure builders for AsC-Causal: the structural causal model and a treatment's data.

* :func:`causal_graph_figure`: confounders Z -> treatment T, Z -> outcome Y, T -> Y (the backdoor
  graph of the paper's AsC-Causal);
* :func:`treatment_scatter`: one point per snippet, a concept's AsC-Eval value against the loss (snippet ids,
  which come from corpus files, HTML-escaped);
* :func:`table2_views`: Table II as shown, in two tables that fit a panel (correlations; the effect and its
  refuters), a missing cell as the word that says why (:mod:`asc.missing`: ``absent``, ``too few``, ``constant``,
  ``undefined``), verdicts in a word.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from asc.causal import CONFOUNDERS
from asc.missing import ABSENT, CONSTANT, TOO_FEW, UNDEFINED
from asc.viz.colors import MAGNITUDE_SCALE
from asc.viz.html import escape_text

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["CORRELATION_COLUMNS", "EFFECT_COLUMNS", "causal_graph_figure", "missing_reason", "table2_views",
           "treatment_scatter"]

CORRELATION_COLUMNS = ("n", *(f"r_{z}" for z in CONFOUNDERS), "r_loss", "p_loss")
EFFECT_COLUMNS = ("n", "ate", "ci_low", "ci_high", "placebo", "random_cause", "subset", "status")
VERDICTS = ("placebo", "random_cause", "subset")


def causal_graph_figure(treatment: str = "T: concept value", outcome: str = "Y: loss",
                        confounders: tuple[str, ...] = CONFOUNDERS,
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
        marker={"color": sub[color], "colorscale": MAGNITUDE_SCALE, "showscale": True, "size": 7, "opacity": 0.8,
                "colorbar": {"title": {"text": color}}},
        hovertemplate="%{text}<br>value %{x:.3f}<br>loss %{y:.3f}<extra></extra>"))
    fig.update_layout(height=360, xaxis={"title": f"{treatment} (snippet AsC-Eval)", "range": [0, 1.02]},
                      yaxis={"title": "cross-entropy (nats/token)"}, plot_bgcolor="white",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title={"text": f"{treatment} vs loss ({len(sub)} snippets where it is present)",
                             "font": {"size": 13}})
    return fig


def missing_reason(status: object) -> str:
    """The word a Table II cell shows when its value is missing, from its row's ``status``
    (:func:`asc.causal.causal_table`): ``absent`` (no snippet has the concept), ``too few`` (fewer snippets than the
    minimum), ``constant`` (one value in every snippet: nothing to compare), ``undefined`` (an estimated row: a
    correlation with a constant confounder; any other status)."""
    text = str(status)
    if "absent" in text:
        return ABSENT
    if "needed" in text:
        return TOO_FEW
    if "one value" in text:
        return CONSTANT
    return UNDEFINED


def table2_views(results: Mapping[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table II as shown, from :func:`asc.causal.causal_table` results per model label: (correlations, effects),
    one row per treatment (and model, next to each other, when there are several), numbers to 3 decimals, verdicts
    as ``passed``/``failed``, ``status`` in a word, each missing cell the word :func:`missing_reason` gives."""
    import pandas as pd

    from asc.viz.tables import shown

    frames = []
    for label, result in results.items():
        frame = result.copy()
        frame.insert(0, "model", label)
        frame["order"] = range(len(frame))
        frames.append(frame)
    both = pd.concat(frames, ignore_index=True).sort_values(["order", "model"], kind="stable")
    reasons = [missing_reason(s) for s in both.get("status", pd.Series(["estimated"] * len(both))).tolist()]
    for column in VERDICTS:
        if column in both.columns:
            both[column] = [None if v is None or v != v else str(v).split(":")[0] for v in both[column].tolist()]
    both["status"] = [r if r != UNDEFINED else str(s) for r, s in zip(reasons, both["status"])]
    head = ["treatment"] + (["model"] if len(results) > 1 else [])
    views = []
    for columns in (CORRELATION_COLUMNS, EFFECT_COLUMNS):
        view = shown(both.reindex(columns=head + list(columns)).reset_index(drop=True),  # every column, estimated or not
                     [c for c in columns if c not in (*VERDICTS, "status", "n")], missing=reasons,
                     words=[c for c in columns if c in VERDICTS])
        views.append(view)
    return views[0], views[1]
