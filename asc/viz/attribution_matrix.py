"""Pure figures of corpus attribution (an :class:`asc.why.matrix.AttributionMatrix`, from a run's ``attribution/``
table).

* :func:`matrix_heatmap`: target category (rows) x source category (columns), the mean share of the absolute
  attribution on the share scale (:data:`asc.viz.colors.SHARE_SCALE`, 0 to 1), each cell's value printed and its
  snippet-bootstrap interval and counts in the hover text; a source category absent from every prompt of the row's
  targets reads ``absent`` and is left uncolored, never a ``0.00`` that would pass for a measured share;
* :func:`matrix_table`: the matrix as a long table (the shown table and the exports), an absent cell's numbers
  missing (the CSV writes ``absent``, the JSON ``null`` with its reason);
* :func:`distance_curves`: the mean share of attribution by AST distance bin from the target, all targets (with the
  interval as a band) and one line per target category.

Nothing is computed here beyond layout; model and category names are HTML-escaped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from asc.concepts import GLOBAL
from asc.missing import ABSENT
from asc.viz.colors import MODEL_COLORS, SHARE_SCALE
from asc.viz.html import escape_text

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from asc.why.matrix import AttributionMatrix

__all__ = ["absent_cells", "distance_curves", "matrix_heatmap", "matrix_table"]


def absent_cells(matrix: AttributionMatrix) -> np.ndarray:
    """(R, C) bool: the cells whose source category had no token in any prompt of the row's targets. A share is the
    absolute attribution on the category's tokens over the whole prompt's (:mod:`asc.why.matrix`: a category with no
    token holds 0), and an absolute gradient x input is never exactly 0 on a real token, so a mean share of exactly 0
    means no token of that category was there."""
    return np.asarray(matrix.share == 0.0)


def matrix_table(matrix: AttributionMatrix) -> pd.DataFrame:
    """:meth:`~asc.why.matrix.AttributionMatrix.frame` with every absent cell's ``share``, ``ci_low``, ``ci_high`` and
    ``signed`` missing (NaN: ``absent`` in the shown table and the CSV), not 0."""
    frame = matrix.frame()
    gone = absent_cells(matrix).ravel()  # frame(): rows in (target, source) order, as the matrix
    frame.loc[gone, ["share", "ci_low", "ci_high", "signed"]] = np.nan
    return frame


def matrix_heatmap(matrix: AttributionMatrix) -> go.Figure:
    """Rows: target categories (with a target); columns: source categories; colour and text: the mean share."""
    import plotly.graph_objects as go

    m = matrix
    rows = [escape_text(t) for t in m.targets]
    cols = [escape_text(s) for s in m.sources]
    counts = np.broadcast_to(np.stack([m.n_targets, m.n_snippets], axis=1)[:, None, :], (*m.share.shape, 2))
    custom = np.concatenate([np.stack([m.ci_low, m.ci_high, m.signed], axis=-1), counts], axis=-1)
    gone = absent_cells(m)
    text = np.where(gone, ABSENT, np.where(np.isnan(m.share), "", np.vectorize(lambda v: f"{v:.2f}")(
        np.nan_to_num(m.share))))
    fig = go.Figure(go.Heatmap(
        z=np.where(gone, np.nan, m.share), x=cols, y=rows, zmin=0, zmax=1, colorscale=SHARE_SCALE,
        colorbar={"title": {"text": "share"}}, hoverongaps=False,
        text=text, texttemplate="%{text}", customdata=custom,
        hovertemplate=("target %{y}, source %{x}: share %{z:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}], "
                       "mean signed %{customdata[2]:.4f}; %{customdata[3]} targets in %{customdata[4]} snippets"
                       "<extra></extra>")))
    level = round(100 * m.ci)
    fig.update_layout(height=max(300, 34 * len(rows) + 170), plot_bgcolor="white",
                      margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      title={"text": f"{escape_text(m.model)}: mean share of gradient x input per source category "
                                     f"(k = {m.k} targets per snippet; {level}% intervals in the hover text)",
                             "font": {"size": 13}},
                      xaxis={"title": "source category (where the attribution lies)", "side": "bottom",
                             "tickangle": -30},
                      yaxis={"title": "target category (what is predicted)", "autorange": "reversed"})
    return fig


def distance_curves(matrix: AttributionMatrix) -> go.Figure:
    """x: AST distance bins; y: mean share. All targets with their interval band, then one line per target
    category (hidden until clicked in the legend when there are many)."""
    import plotly.graph_objects as go

    m = matrix
    x = list(m.distance_bins)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x + x[::-1], y=np.concatenate([m.distance_high[0], m.distance_low[0][::-1]]),
                             fill="toself", fillcolor="rgba(76,120,168,0.18)", line={"width": 0}, hoverinfo="skip",
                             showlegend=False, name="interval"))
    fig.add_trace(go.Scatter(x=x, y=m.distance[0], mode="lines+markers", name=f"{GLOBAL} (every target)",
                             line={"color": MODEL_COLORS[0], "width": 3},
                             customdata=np.stack([m.distance_low[0], m.distance_high[0]], axis=1),
                             hovertemplate="distance %{x}: %{y:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}]"
                                           "<extra>every target</extra>"))
    for i, target in enumerate(m.targets, start=1):
        fig.add_trace(go.Scatter(
            x=x, y=m.distance[i], mode="lines+markers", name=escape_text(target),
            line={"color": MODEL_COLORS[i % len(MODEL_COLORS)], "width": 1.5},
            visible=True if len(m.targets) <= 4 else "legendonly",
            customdata=np.stack([m.distance_low[i], m.distance_high[i]], axis=1),
            hovertemplate="distance %{x}: %{y:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}]<extra>"
                          + escape_text(target) + "</extra>"))
    fig.update_layout(height=380, plot_bgcolor="white", margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      title={"text": f"{escape_text(m.model)}: share of the attribution by AST distance from the "
                                     "target", "font": {"size": 13}},
                      xaxis={"title": "tree path length from the target node (edges)", "type": "category"},
                      yaxis={"title": "mean share of the absolute attribution", "rangemode": "tozero"},
                      legend={"orientation": "h", "y": -0.3})
    return fig
