"""Pure figure of fork points in corpus runs made with ``--forks`` (table from :func:`asc.corpus.forks.fork_table`).

:func:`fork_bars`: per syntax category (Global first), the share of its tokens that are fork points, one bar per
model with its 95% snippet-bootstrap interval. Nothing is computed here beyond layout; model names are
HTML-escaped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from asc.concepts import GLOBAL
from asc.viz.colors import MODEL_COLORS
from asc.viz.html import escape_text

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["fork_bars"]


def fork_bars(table: pd.DataFrame) -> go.Figure:
    """Grouped bars: x = category (Global first, then as in ``table``), y = fork rate, error bars = interval."""
    import plotly.graph_objects as go

    order = list(dict.fromkeys(table["category"]))
    order = ([GLOBAL] if GLOBAL in order else []) + [c for c in order if c != GLOBAL]
    fig = go.Figure()
    for k, (model, rows) in enumerate(table.groupby("model", sort=False)):
        rows = rows.set_index("category").reindex(order).reset_index()
        fig.add_trace(go.Bar(
            name=escape_text(str(model)), x=rows["category"], y=rows["rate"],
            marker_color=MODEL_COLORS[k % len(MODEL_COLORS)],
            error_y={"type": "data", "symmetric": False, "array": (rows["ci_high"] - rows["rate"]).tolist(),
                     "arrayminus": (rows["rate"] - rows["ci_low"]).tolist(), "thickness": 1.2, "width": 3},
            customdata=np.stack([rows["ci_low"], rows["ci_high"], rows["n_forks"], rows["n_tokens"]], axis=1),
            hovertemplate="%{x}: %{y:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}], %{customdata[2]} fork "
                          "points of %{customdata[3]} tokens<extra>%{fullData.name}</extra>"))
    top = float(np.nanmax(table["ci_high"].to_numpy(np.float64), initial=0.0)) if len(table) else 0.0
    fig.update_layout(barmode="group", height=380, plot_bgcolor="white", margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      yaxis={"range": [0, min(1.0, top * 1.1) or 1.0], "title": "share of tokens that are fork points"},
                      title={"text": "Fork points per category: where the models hesitate (95% bootstrap intervals)",
                             "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.25})
    return fig
